import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MockResponsesServer } from "@codex-agent-api/testkit";
import pino from "pino";
import { type Config, loadConfig } from "../src/config.js";
import { type Service, startService } from "../src/service.js";

export interface ServerFixture {
  service: Service;
  url: string;
  mock: MockResponsesServer;
  dataDir: string;
  workspace: string;
  config: Config;
  /** fetch against the server; JSON bodies are serialised. */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  json<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: T }>;
  /** Stops the service (graceful) and, unless `keepData`, removes its directories. */
  close(opts?: { keepData?: boolean }): Promise<void>;
}

/**
 * Starts the real service in-process (real engine, in-process scripted mock model, temp data dir, random port).
 * `args` are CLI flags, `env` extra environment for config parsing.
 */
export async function startServer(
  opts: { args?: string[]; env?: Record<string, string>; dataDir?: string } = {},
): Promise<ServerFixture> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "cas-test-"));
  const config = loadConfig(
    ["--mock-model", "--port", "0", "--data-dir", dataDir, ...(opts.args ?? [])],
    { ...opts.env },
    dataDir,
  );
  const service = await startService(config, {
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    mockCapture: true,
  });
  const url = service.url;
  const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(url + path, {
      method,
      headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
  return {
    service,
    url,
    mock: service.mock!,
    dataDir,
    workspace: config.workspaceRoot,
    config,
    request,
    async json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
      const res = await request(method, path, body, headers);
      return { status: res.status, body: (await res.json()) as T };
    },
    async close(o = {}) {
      await service.stop();
      if (!o.keepData && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface SseEvent {
  id: string | null;
  event: string | null;
  data: Record<string, unknown>;
}

/** One SSE block; null for comments (keep-alives) and `[DONE]`. */
export function parseSseBlock(block: string): SseEvent | null {
  let id: string | null = null;
  let event: string | null = null;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) id = line.slice(4);
    else if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data.push(line.slice(6));
  }
  if (data.length === 0 || data[0] === "[DONE]") return null;
  return { id, event, data: JSON.parse(data.join("\n")) as Record<string, unknown> };
}

/** Reads an SSE response to its end (or until `stop` says so), parsing frames. */
export async function readSse(res: Response, stop?: (e: SseEvent) => boolean): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let idx = buffer.indexOf("\n\n");
    while (idx >= 0) {
      const block = buffer.slice(0, idx);
      buffer = buffer.slice(idx + 2);
      idx = buffer.indexOf("\n\n");
      const e = parseSseBlock(block);
      if (!e) continue;
      events.push(e);
      if (stop?.(e)) {
        await reader.cancel();
        return events;
      }
    }
  }
  return events;
}

/** Waits until `check` returns a truthy value (polling with a short interval), or throws after `timeoutMs`. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  timeoutMs = 15_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function cleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
