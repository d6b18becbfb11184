// An engine for unit tests: no process, the codex SDK's own Thread on a scripted stand-in for the app-server. Each
// engine turn runs the test's script (messages, token usage, completing the goal, its end); `turn/interrupt` ends
// the running turn `interrupted` (unless `hangOnInterrupt`), goal activation on an idle thread starts a
// continuation, as the engine does. Notifications are delivered in order, each on a later tick than what caused it.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  InvalidRequestError,
  Thread,
  type ThreadGoal,
  type ThreadGoalStatus,
  TransportClosedError,
} from "@codex-agent-api/codex";
import pino from "pino";
import { loadConfig } from "../../src/config/load.js";
import { type Core, createCore } from "../../src/main/compose.js";
import type { Engines, Lease } from "../../src/platform/engine/types.js";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { TestClock } from "./clock.js";

type Status = "completed" | "failed" | "interrupted";

/** What a script does in one engine turn. */
export interface EngineTurn {
  readonly threadId: string;
  readonly id: string;
  /** The user's input (`turn/start`); empty for a goal continuation the engine started. */
  readonly input: unknown[];
  /** Resolves once the turn was asked to stop. */
  readonly interrupted: Promise<void>;
  message(text: string): void;
  /** A command starts and prints `output`; it is still running (the script never ends it). */
  startCommand(command: string, output: string): void;
  /** The model used `tokens` more (input tokens: what a goal is charged). */
  usage(tokens: number): void;
  /** The model marks the goal complete. */
  completeGoal(): void;
  end(status?: Status, error?: string): void;
}

export type Script = (turn: EngineTurn) => void | Promise<void>;

interface Op {
  onNotification(n: { method: string; params: Record<string, unknown> }): void;
  fail(err: Error): void;
}

interface FakeThread {
  thread: Thread;
  route: Op | null;
  running: { id: string; interrupt: () => void } | null;
  goal: ThreadGoal | null;
  tokens: number;
  turns: string[];
}

export class FakeEngines implements Engines {
  /** Runs every engine turn (default: one message, then completed). */
  script: Script = (t) => {
    t.message("done");
    t.end();
  };
  /** An interrupt is acknowledged but never ends the turn (a hung engine). */
  hangOnInterrupt = false;
  readonly requests: Array<{ method: string; params: Record<string, unknown> }> = [];
  readonly kills: number[] = [];
  leased = 0;
  released = 0;
  private readonly threads = new Map<string, FakeThread>();
  private delivery: Promise<void> = Promise.resolve();
  private next = 0;

  async lease(threadId: string | null): Promise<Lease> {
    const t = this.threadOf(threadId ?? `thr_${++this.next}`);
    this.leased++;
    let released = false;
    return {
      thread: t.thread,
      engine: 0,
      release: () => {
        if (!released) this.released++;
        released = true;
      },
    };
  }

  call<T>(method: string, params: unknown): Promise<T> {
    return this.request<T>(method, params as Record<string, unknown>);
  }

  /** The engine turns a thread ran, oldest first. */
  turnsOf(threadId: string): string[] {
    return this.threads.get(threadId)?.turns ?? [];
  }

  goalOf(threadId: string): ThreadGoal | null {
    return this.threads.get(threadId)?.goal ?? null;
  }

  killEngine(index: number): number | undefined {
    this.kills.push(index);
    for (const t of this.threads.values()) {
      const op = t.route;
      t.route = null;
      t.running = null;
      op?.fail(new TransportClosedError("engine killed"));
    }
    return 4242;
  }

  forget(): void {}
  killAll(): void {}
  stats() {
    return [];
  }
  model() {
    return { reachable: true, reason: null, since: null };
  }
  async warm(): Promise<void> {}
  async close(): Promise<void> {}

  private threadOf(id: string): FakeThread {
    let t = this.threads.get(id);
    if (!t) {
      const host = {
        request: <T>(method: string, params: unknown) =>
          this.request<T>(method, params as Record<string, unknown>),
        route: (_: string, op: Op) => {
          t!.route = op;
        },
        unroute: (_: string, op: Op) => {
          if (t!.route === op) t!.route = null;
        },
      };
      t = {
        thread: new Thread(host, id, false),
        route: null,
        running: null,
        goal: null,
        tokens: 0,
        turns: [],
      };
      this.threads.set(id, t);
    }
    return t;
  }

  private emit(t: FakeThread, method: string, params: Record<string, unknown>): void {
    const n = { method, params: { threadId: t.thread.id, ...params } };
    this.delivery = this.delivery
      .then(() => new Promise<void>((r) => setImmediate(r)))
      .then(() => {
        t.thread.observe(n.method, n.params);
        t.route?.onNotification(n);
      });
  }

  private startTurn(t: FakeThread, input: unknown[]): string {
    const id = `eng_${++this.next}`;
    t.turns.push(id);
    const startedAt = Date.now() / 1000;
    const protocolTurn = (status: string, error: string | null) => ({
      id,
      rootTurnId: null,
      items: [],
      itemsView: "summary",
      status,
      error: error === null ? null : { message: error, codexErrorInfo: null, additionalDetails: null },
      startedAt,
      completedAt: status === "inProgress" ? null : Date.now() / 1000,
      durationMs: null,
    });
    let interrupt!: () => void;
    const interrupted = new Promise<void>((r) => {
      interrupt = r;
    });
    let ended = false;
    let items = 0;
    const turn: EngineTurn = {
      threadId: t.thread.id,
      id,
      input,
      interrupted,
      message: (text) => {
        const item = { type: "agentMessage", id: `${id}_m${++items}`, text, phase: null };
        this.emit(t, "item/started", { turnId: id, item: { ...item, text: "" } });
        this.emit(t, "item/completed", { turnId: id, item });
      },
      startCommand: (command, output) => {
        const itemId = `${id}_c${++items}`;
        const item = {
          ...{ type: "commandExecution", id: itemId, command, cwd: "/workspace", processId: null },
          ...{
            status: "inProgress",
            commandActions: [],
            aggregatedOutput: null,
            exitCode: null,
            durationMs: null,
          },
        };
        this.emit(t, "item/started", { turnId: id, item });
        this.emit(t, "item/commandExecution/outputDelta", { turnId: id, itemId, delta: output });
      },
      usage: (tokens) => {
        t.tokens += tokens;
        const breakdown = (n: number) => ({
          ...{ totalTokens: n, inputTokens: n, cachedInputTokens: 0, cacheWriteInputTokens: 0 },
          ...{ outputTokens: 0, reasoningOutputTokens: 0 },
        });
        const tokenUsage = { total: breakdown(t.tokens), last: breakdown(tokens), modelContextWindow: null };
        this.emit(t, "thread/tokenUsage/updated", { turnId: id, tokenUsage });
      },
      completeGoal: () => this.setGoal(t, { status: "complete" }),
      end: (status = "completed", error) => {
        if (ended) return;
        ended = true;
        if (t.running?.id === id) t.running = null;
        this.emit(t, "turn/completed", { turn: protocolTurn(status, error ?? null) });
      },
    };
    t.running = {
      id,
      interrupt: () => {
        interrupt();
        if (!this.hangOnInterrupt) turn.end("interrupted");
      },
    };
    this.emit(t, "turn/started", { turn: protocolTurn("inProgress", null) });
    this.delivery = this.delivery.then(() => {
      void Promise.resolve(this.script(turn)).catch((err: unknown) => turn.end("failed", String(err)));
    });
    return id;
  }

  private setGoal(t: FakeThread, p: Record<string, unknown>): ThreadGoal {
    const now = Date.now() / 1000;
    const objective = typeof p.objective === "string" ? p.objective : t.goal?.objective;
    if (objective === undefined) throw new InvalidRequestError("thread has no goal");
    const goal: ThreadGoal = {
      threadId: t.thread.id,
      objective,
      status: (p.status as ThreadGoalStatus | undefined) ?? t.goal?.status ?? "active",
      tokenBudget: p.tokenBudget === undefined ? (t.goal?.tokenBudget ?? null) : (p.tokenBudget as number),
      tokensUsed: t.goal?.tokensUsed ?? 0,
      timeUsedSeconds: 0,
      createdAt: t.goal?.createdAt ?? now,
      updatedAt: now,
    };
    t.goal = goal;
    this.emit(t, "thread/goal/updated", { goal });
    // Activating an idle thread's goal starts a continuation.
    if (goal.status === "active" && !t.running) this.startTurn(t, []);
    return goal;
  }

  private async request<T>(method: string, params: Record<string, unknown>): Promise<T> {
    this.requests.push({ method, params });
    const t = this.threadOf(String(params.threadId));
    const answer = (): unknown => {
      switch (method) {
        case "turn/start":
          if (t.running) throw new InvalidRequestError("thread already has an active turn");
          return { turn: { id: this.startTurn(t, params.input as unknown[]) } };
        case "turn/interrupt":
          if (!t.running) throw new InvalidRequestError("no active turn to interrupt");
          t.running.interrupt();
          return {};
        case "turn/steer":
          if (!t.running) throw new InvalidRequestError("no active turn to steer");
          return { turnId: t.running.id };
        case "thread/goal/get":
          return { goal: t.goal };
        case "thread/goal/set":
          return { goal: this.setGoal(t, params) };
        case "thread/goal/clear": {
          const cleared = t.goal !== null;
          t.goal = null;
          this.emit(t, "thread/goal/cleared", {});
          return { cleared };
        }
        case "thread/backgroundTerminals/list":
          return { data: [], nextCursor: null };
        default:
          throw new InvalidRequestError(`the fake engine does not know ${method}`);
      }
    };
    // An answer takes a while (a round trip to the engine process).
    await new Promise<void>((r) => setImmediate(r));
    return answer() as T;
  }
}

export interface FakeCore {
  core: Core;
  engines: FakeEngines;
  clock: TestClock;
  close(): Promise<void>;
}

/**
 * The service's core on the fake engine, the test clock and an in-memory store (or `store`): a configured model,
 * no checkpoints (they need git). `args` are more CLI flags.
 */
export function fakeCore(
  opts: { args?: string[]; env?: Record<string, string>; store?: Store } = {},
): FakeCore {
  const dataDir = mkdtempSync(join(tmpdir(), "cas-fake-"));
  const flags = ["--mock-model", "--checkpoints", "off", "--port", "0", "--data-dir", dataDir];
  const config = loadConfig([...flags, ...(opts.args ?? [])], { ...opts.env }, dataDir);
  mkdirSync(config.workspaceRoot, { recursive: true });
  const engines = new FakeEngines();
  const clock = new TestClock();
  const store = opts.store ?? SqliteStore.open(":memory:");
  const core = createCore(config, { store, engines, clock, logger: pino({ level: "silent" }) });
  return {
    core,
    engines,
    clock,
    async close() {
      await core.runner.abortAll("test over");
      await core.hub.drain();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
