// Running a host command to completion (podman, mount, mkfs) with a deadline and bounded output.
import { spawn } from "node:child_process";

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const MAX_OUTPUT = 1 << 20;

export function runCommand(
  cmd: string,
  args: readonly string[],
  opts: { timeoutMs?: number; input?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      if (stdout.length < MAX_OUTPUT) stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      if (stderr.length < MAX_OUTPUT) stderr += d;
    });
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            stderr += `\n(killed after ${opts.timeoutMs} ms)`;
            child.kill("SIGKILL");
          }, opts.timeoutMs);
    child.on("error", (err) => {
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input ?? "");
  });
}

/** The first executable named `name` on PATH, or null. */
export async function which(name: string): Promise<string | null> {
  const { access, constants } = await import("node:fs/promises");
  for (const dir of (
    process.env.PATH ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  ).split(":")) {
    if (!dir) continue;
    const path = `${dir}/${name}`;
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {}
  }
  return null;
}
