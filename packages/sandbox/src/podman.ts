// The podman command line with this host's global arguments (runtime, cgroup manager).
import { SandboxError } from "./errors.js";
import { runCommand } from "./exec.js";

export class Podman {
  constructor(
    readonly bin: string,
    readonly globalArgs: readonly string[],
  ) {}

  /** Arguments for a podman invocation (for spawning long-running ones, e.g. `exec -i`). */
  args(args: readonly string[]): string[] {
    return [...this.globalArgs, ...args];
  }

  /** Runs podman; throws `podman_failed` with its stderr when it exits non-zero. */
  async run(args: readonly string[], opts: { timeoutMs?: number } = {}): Promise<string> {
    const res = await runCommand(this.bin, this.args(args), { timeoutMs: opts.timeoutMs ?? 120_000 });
    if (res.code !== 0) {
      const msg = res.stderr.trim().split("\n").slice(-3).join(" ") || `exit ${res.code ?? res.signal}`;
      throw new SandboxError("podman_failed", `podman ${args[0] ?? ""} failed: ${msg}`);
    }
    return res.stdout;
  }

  /** Like run(), but a non-zero exit is returned instead of thrown. */
  async tryRun(
    args: readonly string[],
    opts: { timeoutMs?: number } = {},
  ): Promise<{ ok: boolean; out: string; err: string }> {
    const res = await runCommand(this.bin, this.args(args), { timeoutMs: opts.timeoutMs ?? 120_000 });
    return { ok: res.code === 0, out: res.stdout, err: res.stderr };
  }
}
