import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type MockResponsesServer, processesUsing } from "@codex-agent-api/testkit";
import pino from "pino";
import { type Config, loadConfig } from "../../src/config/load.js";
import type { App } from "../../src/http/app-types.js";
import type { Clock } from "../../src/kernel/clock.js";
import { buildApp } from "../../src/main/app.js";
import { type Core, createCore } from "../../src/main/compose.js";
import { type Service, startService } from "../../src/main/service.js";
import type { Engines } from "../../src/platform/engine/types.js";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { backendArgs, removeSandboxes } from "./sandbox.js";

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
  /** A session's workspace on this host (on the container backend: its sandbox's volume). */
  workspaceOf(sessionId: string): Promise<string>;
  /** Stops the service (graceful) and, unless `keepData`, removes its directories. */
  close(opts?: { keepData?: boolean }): Promise<void>;
}

/**
 * Starts the real service in-process (real engine, in-process scripted mock model, temp data dir, random port).
 * `args` are CLI flags, `env` extra environment for config parsing.
 */
export async function startServer(
  opts: { args?: string[]; env?: Record<string, string>; dataDir?: string; clock?: Clock } = {},
): Promise<ServerFixture> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "cas-test-"));
  const backend = backendArgs(opts.args ?? [], dataDir);
  const config = loadConfig(
    ["--mock-model", "--port", "0", "--data-dir", dataDir, ...backend.args, ...(opts.args ?? [])],
    { ...opts.env },
    dataDir,
  );
  const service = await startService(config, {
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    mockCapture: true,
    ...(opts.clock ? { clock: opts.clock } : {}),
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
    async workspaceOf(sessionId: string) {
      const s = await service.core.store.getSession(sessionId);
      if (!s) throw new Error(`no session ${sessionId}`);
      return s.workspace;
    },
    async close(o = {}) {
      await service.stop();
      expectNothingLeft(dataDir, config.workspaceRoot);
      if (!o.keepData && !opts.dataDir) {
        // The sandboxes first: a shared workspace they bind-mount lies in the data directory. (With a data
        // directory of the test's own, a later server may start on it: they stay, scripts/container-suites.ts
        // removes them once the run ends.)
        if (backend.dir) await removeSandboxes(backend.dir);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

export { readSse, type SseEvent } from "./sse-client.js";

/**
 * Once a service has stopped, nothing it started may still run in its directories (engine commands and sandboxes,
 * git writing a checkpoint…): it would write there after the stop (a test's clean-up then fails with ENOTEMPTY).
 */
export function expectNothingLeft(...dirs: string[]): void {
  const found = [...new Set(dirs.map((d) => realpathSync(d)))].flatMap((d) => processesUsing(d));
  const left = [...new Map(found.map((p) => [p.pid, p])).values()];
  if (left.length > 0) {
    const list = left
      .map(
        (p) =>
          `${p.pid} ${p.cmdline.length > 300 ? `${p.cmdline.slice(0, 120)} … ${p.cmdline.slice(-150)}` : p.cmdline}`,
      )
      .join("; ");
    throw new Error(`still running after the service stopped: ${list}`);
  }
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

/** Engines for tests that never reach one (validation, error shapes): any use is a test bug. */
export function stubEngines(): Engines {
  const refuse = () => Promise.reject(new Error("this test has no engine"));
  return {
    lease: refuse,
    call: refuse,
    forget: () => {},
    killEngine: () => undefined,
    stats: () => [],
    model: () => ({ reachable: null, reason: null, since: null }),
    warm: async () => {},
    killAll: () => {},
    close: async () => {},
  };
}

export interface AppFixture {
  app: App;
  core: Core;
  /** A base URL for building request URLs (requests go through `app.inject`, no socket). */
  url: string;
  dataDir: string;
  workspace: string;
  config: Config;
  /** `fetch` served by `app.inject` (for the official SDK's `fetch` option). */
  fetch: typeof fetch;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  json<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: T }>;
  close(): Promise<void>;
}

/**
 * The HTTP app alone: an in-memory store (or `store`), no engine and no model (a turn would fail at once saying no
 * model is configured), requests through `app.inject`. For validation and error-shape suites.
 */
export async function startApp(
  opts: { args?: string[]; env?: Record<string, string>; store?: Store } = {},
): Promise<AppFixture> {
  const dataDir = mkdtempSync(join(tmpdir(), "cas-app-"));
  const config = loadConfig(
    ["--port", "0", "--data-dir", dataDir, ...(opts.args ?? [])],
    { ...opts.env },
    dataDir,
  );
  mkdirSync(config.workspaceRoot, { recursive: true });
  const store = opts.store ?? SqliteStore.open(":memory:");
  const core = createCore(config, { store, engines: stubEngines(), logger: pino({ level: "silent" }) });
  const app = buildApp(core);
  await app.ready();
  const url = "http://localhost";
  const injectFetch: typeof fetch = async (input, init) => {
    const target = new URL(typeof input === "string" || input instanceof URL ? input.toString() : input.url);
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => {
      headers[k] = v;
    });
    const body = init?.body;
    const res = await app.inject({
      method: (init?.method ?? "GET") as "GET",
      url: target.pathname + target.search,
      headers,
      ...(body !== undefined && body !== null
        ? { payload: typeof body === "string" ? body : String(body) }
        : {}),
    });
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      for (const one of [v].flat()) out.append(k, String(one));
    }
    const empty = res.statusCode === 204 || res.statusCode === 304;
    return new Response(empty ? null : res.rawPayload, { status: res.statusCode, headers: out });
  };
  const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    injectFetch(url + path, {
      method,
      headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
  return {
    app,
    core,
    url,
    dataDir,
    workspace: config.workspaceRoot,
    config,
    fetch: injectFetch,
    request,
    async json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
      const res = await request(method, path, body, headers);
      return { status: res.status, body: (await res.json()) as T };
    },
    async close() {
      await app.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
