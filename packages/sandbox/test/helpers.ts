// Test helpers: a raw JSON-RPC client of the executor bridge (what the engine's app-server speaks to an exec-server),
// the image, and cleanup checks.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { buildImage, DEFAULT_IMAGE } from "../src/index.js";

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;

/** A unique container name prefix per test run (tests never touch other runs' containers). */
export const runPrefix = (tag: string): string => `t${process.pid.toString(36)}${tag}-`;

export function tempRoot(tag: string): string {
  // Loop images on the host's disk (not /dev/shm): the kernel's loop driver wants a real file system under it.
  return mkdtempSync(join(process.env.SANDBOX_TEST_ROOT ?? "/var/tmp", `sbx-${tag}-`));
}

let imageReady: Promise<string> | null = null;
/** The default image, built when missing (cached by its content stamp). */
export function ensureImage(): Promise<string> {
  imageReady ??= buildImage({ log: (l) => console.log(l) }).then(() => DEFAULT_IMAGE);
  return imageReady;
}

interface Msg {
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export class ExecClient {
  private nextId = 1;
  private pending = new Map<number, (m: Msg) => void>();
  private listeners = new Set<(m: Msg) => void>();
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const m = JSON.parse(String(data)) as Msg;
      if (typeof m.id === "number" && !m.method) {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        p?.(m);
      } else for (const l of this.listeners) l(m);
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const p of this.pending.values()) p({ error: { code: -1, message: `closed ${code}` } });
      this.pending.clear();
    });
  }

  static connect(url: string, token: string | null): Promise<ExecClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
      ws.once("open", () => resolve(new ExecClient(ws)));
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once("error", reject);
    });
  }

  /** connect + initialize + initialized. */
  static async open(url: string, token: string): Promise<ExecClient> {
    const c = await ExecClient.connect(url, token);
    await c.initialize();
    return c;
  }

  request(method: string, params: unknown, timeoutMs = 30_000): Promise<Msg> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${method}: no answer in ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, (m) => {
        clearTimeout(t);
        resolve(m);
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async initialize(): Promise<Msg> {
    const r = await this.request("initialize", { clientName: "sandbox-test", resumeSessionId: null });
    if (r.error) throw new Error(`initialize: ${r.error.message}`);
    this.ws.send(JSON.stringify({ method: "initialized", params: {} }));
    return r;
  }

  /** Runs `sh -c cmd` in /workspace through process/start; resolves when it exited. */
  async run(cmd: string, timeoutMs = 60_000): Promise<CommandResult> {
    const processId = `p${this.nextId}`;
    let stdout = "";
    let stderr = "";
    const done = new Promise<number | null>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`command timed out: ${cmd}`)), timeoutMs);
      const l = (m: Msg) => {
        if (m.params?.processId !== processId) return;
        if (m.method === "process/output") {
          const s = Buffer.from(String(m.params.chunk), "base64").toString();
          if (m.params.stream === "stderr") stderr += s;
          else stdout += s;
        } else if (m.method === "process/exited") {
          clearTimeout(t);
          this.listeners.delete(l);
          resolve((m.params.exitCode as number | null) ?? null);
        }
      };
      this.listeners.add(l);
      this.ws.once("close", () => {
        clearTimeout(t);
        this.listeners.delete(l);
        reject(new Error(`connection closed during: ${cmd}`));
      });
    });
    const r = await this.request("process/start", {
      processId,
      argv: ["/bin/bash", "-c", cmd],
      cwd: "file:///workspace",
      envPolicy: { inherit: "all", ignoreDefaultExcludes: true, exclude: [], set: {}, includeOnly: [] },
      env: {},
      tty: false,
      pipeStdin: false,
      arg0: null,
      sandbox: null,
    });
    if (r.error) throw new Error(`process/start: ${r.error.message}`);
    const exitCode = await done;
    return { exitCode, stdout, stderr };
  }

  close(): void {
    this.ws.close();
  }
}

/** Waits for `pred` with a deadline (no fixed sleeps). */
export async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Containers whose name starts with the prefix. */
export function containersWithPrefix(prefix: string): string[] {
  const out = execFileSync("podman", ["ps", "-a", "--format", "{{.Names}}"], { encoding: "utf8" });
  return out.split("\n").filter((n) => n.startsWith(prefix));
}

/** Mounts and loop devices under a directory. */
export function mountsUnder(dir: string): string[] {
  const mounts = execFileSync("findmnt", ["-rn", "-o", "TARGET"], { encoding: "utf8" }).split("\n");
  const loops = execFileSync("losetup", ["-n", "-O", "BACK-FILE", "-l"], { encoding: "utf8" }).split("\n");
  return [...mounts, ...loops].map((l) => l.trim()).filter((l) => l.startsWith(dir));
}
