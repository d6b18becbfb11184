/**
 * Prometheus metrics (prom-client), one registry per service: turns by the dialect of the request that started them,
 * their latency and token usage, the event log, live streams, goals, engine processes, HTTP requests, and Node's
 * own process metrics. Counters move on stored events (`hub.onEvent`); gauges are read when scraped.
 */
import { readFile } from "node:fs/promises";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { EngineStats } from "../../platform/engine/types.js";
import type { EventRecord, GoalStatus, TurnRecord } from "../../store/types.js";
import type { TurnDialect } from "./origins.js";

export const METRIC_PREFIX = "codex_agent_api_";

/** The container backend's sandboxes as the gauges show them (no session ids: metrics are not per tenant). */
export interface SandboxGauges {
  warm: number;
  creating: number;
  inUse: number;
  stopped: number;
  /** Memory in use by the running containers, together. */
  memoryBytes: number;
  /** What a session of the default size gets. */
  limits: { cpus: number; memoryBytes: number; pids: number; diskBytes: number };
}

/** What the gauges read when scraped. */
export interface MetricSources {
  activeTurns(): number;
  subscribers(): number;
  engines(): EngineStats[];
  /** Null: the local backend (no sandboxes of this service's own). */
  sandboxes(): SandboxGauges | null;
  /** The local backend's limits of each engine's process group (null or absent: none applied). */
  localLimits?(): SandboxGauges["limits"] | null;
}

/** Turn durations: from a trivial turn (~0.1 s) to an hour-long goal. */
const TURN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

const TOKEN_KINDS = ["input", "cached_input", "output", "reasoning_output"] as const;

/** A session's own turn, or one of a subagent (its own thread, with its own usage). */
const agentOf = (turn: TurnRecord) => (turn.subagent_id ? "subagent" : "root");

/** Resident memory of a process from /proc (Linux); undefined where there is none. */
export async function residentBytes(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly turnsStarted: Counter<"dialect" | "agent">;
  private readonly turnsFinished: Counter<"dialect" | "agent" | "status">;
  private readonly turnDuration: Histogram<"dialect" | "agent" | "status">;
  private readonly tokens: Counter<"dialect" | "kind">;
  private readonly eventsAppended: Counter<"type">;
  private readonly httpRequests: Counter<"dialect" | "method" | "route" | "status">;
  private readonly httpDuration: Histogram<"method" | "route">;
  private readonly sandboxLimitHits: Counter<"limit">;
  /** The last goal status this process wrote, per session. */
  private readonly goals = new Map<string, GoalStatus>();

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    const name = (n: string) => `${METRIC_PREFIX}${n}`;
    collectDefaultMetrics({ register: this.registry });
    this.turnsStarted = new Counter({
      name: name("turns_started_total"),
      help: "Turns started by this process, by the dialect of the request that started them (agent: root or subagent)",
      labelNames: ["dialect", "agent"],
      registers,
    });
    this.turnsFinished = new Counter({
      name: name("turns_finished_total"),
      help: "Turns ended by this process, by dialect, agent (root or subagent) and final status (completed, failed, cancelled, interrupted)",
      labelNames: ["dialect", "agent", "status"],
      registers,
    });
    this.turnDuration = new Histogram({
      name: name("turn_duration_seconds"),
      help: "Turn latency, from start to end (a goal is one turn across its continuations)",
      labelNames: ["dialect", "agent", "status"],
      buckets: TURN_BUCKETS,
      registers,
    });
    this.tokens = new Counter({
      name: name("model_tokens_total"),
      help: "Model tokens used by ended turns, subagents' included (kind: input, cached_input (part of input), output, reasoning_output (part of output))",
      labelNames: ["dialect", "kind"],
      registers,
    });
    this.eventsAppended = new Counter({
      name: name("events_appended_total"),
      help: "Events this process appended to session logs, by event type",
      labelNames: ["type"],
      registers,
    });
    this.httpRequests = new Counter({
      name: name("http_requests_total"),
      help: "HTTP requests answered, by dialect, method, route pattern and status code",
      labelNames: ["dialect", "method", "route", "status"],
      registers,
    });
    this.httpDuration = new Histogram({
      name: name("http_request_duration_seconds"),
      help: "Time to answer an HTTP request (a stream: until it ends), by method and route pattern",
      labelNames: ["method", "route"],
      registers,
    });
    new Gauge({
      name: name("active_turns"),
      help: "Turns running in this process",
      registers,
      collect() {
        this.set(sources.activeTurns());
      },
    });
    const goals = this.goals;
    new Gauge({
      name: name("active_goals"),
      help: "Goals whose last status written by this process is active",
      registers,
      collect() {
        let n = 0;
        for (const status of goals.values()) if (status === "active") n++;
        this.set(n);
      },
    });
    new Gauge({
      name: name("sse_subscribers"),
      help: "Live event-log subscriptions (SSE streams and turn waiters)",
      registers,
      collect() {
        this.set(sources.subscribers());
      },
    });
    new Gauge({
      name: name("engine_processes"),
      help: "Running codex app-server processes",
      registers,
      collect() {
        this.set(sources.engines().filter((e) => e.pid !== undefined).length);
      },
    });
    new Gauge({
      name: name("engine_threads_loaded"),
      help: "Threads loaded in each engine process (the engine never unloads them; the process is recycled)",
      labelNames: ["engine"],
      registers,
      collect() {
        this.reset();
        for (const e of sources.engines()) this.set({ engine: String(e.index) }, e.threads);
      },
    });
    new Gauge({
      name: name("engine_busy_turns"),
      help: "Turns running on each engine process",
      labelNames: ["engine"],
      registers,
      collect() {
        this.reset();
        for (const e of sources.engines()) this.set({ engine: String(e.index) }, e.busy);
      },
    });
    this.sandboxLimitHits = new Counter({
      name: name("sandbox_limit_hits_total"),
      help:
        "Sandbox limits commands ran into (local backend: their engine group's): memory (a process OOM-killed) or " +
        "pids (a fork refused)",
      labelNames: ["limit"],
      registers,
    });
    new Gauge({
      name: name("sandboxes"),
      help: "Sandboxes (container backend) by state: warm (pooled), creating, in_use (running), stopped",
      labelNames: ["state"],
      registers,
      collect() {
        this.reset();
        const s = sources.sandboxes();
        if (!s) return;
        const states = { warm: s.warm, creating: s.creating, in_use: s.inUse, stopped: s.stopped };
        for (const [state, n] of Object.entries(states)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: name("sandbox_memory_bytes"),
      help: "Memory in use by the sandboxes' running containers (warm ones included), together (their cgroups)",
      registers,
      collect() {
        this.reset();
        const s = sources.sandboxes();
        if (s) this.set(s.memoryBytes);
      },
    });
    new Gauge({
      name: name("sandbox_default_limit"),
      help:
        "What a sandbox of the default size gets (local backend: each engine's process group; disk_bytes: the " +
        "largest file): cpus, memory_bytes, pids, disk_bytes",
      labelNames: ["resource"],
      registers,
      collect() {
        this.reset();
        const l = sources.sandboxes()?.limits ?? sources.localLimits?.();
        if (!l) return;
        const limits = { cpus: l.cpus, memory_bytes: l.memoryBytes, pids: l.pids, disk_bytes: l.diskBytes };
        for (const [resource, v] of Object.entries(limits)) this.set({ resource }, v);
      },
    });
    new Gauge({
      name: name("engine_resident_memory_bytes"),
      help: "Resident memory (RSS) of each running engine process",
      labelNames: ["engine"],
      registers,
      async collect() {
        this.reset();
        const running = sources.engines().filter((e) => e.pid !== undefined);
        const sizes = await Promise.all(running.map((e) => residentBytes(e.pid!)));
        for (const [i, e] of running.entries()) {
          const bytes = sizes[i];
          if (bytes !== undefined) this.set({ engine: String(e.index) }, bytes);
        }
      },
    });
  }

  /** A sandbox's command ran into a limit (platform/sandbox/sandboxes.ts `onLimitHit`). */
  sandboxLimitHit(limit: "memory" | "pids", n = 1): void {
    this.sandboxLimitHits.inc({ limit }, n);
  }

  /** Every stored event of this process, in order; `dialect` is the dialect of the turn's request, if any. */
  event(e: EventRecord, dialect: TurnDialect): void {
    this.eventsAppended.inc({ type: e.type });
    switch (e.type) {
      case "turn.started":
        this.turnsStarted.inc({ dialect, agent: agentOf(e.data.turn) });
        break;
      case "turn.completed":
      case "turn.failed":
      case "turn.cancelled":
        this.turnEnded(e.data.turn, dialect);
        break;
      case "goal.updated":
        if (e.data.goal) this.goals.set(e.session_id, e.data.goal.status);
        else this.goals.delete(e.session_id);
        break;
      default:
        break;
    }
  }

  /** A session is gone (its goal with it). */
  sessionDeleted(sessionId: string): void {
    this.goals.delete(sessionId);
  }

  request(r: { dialect: string; method: string; route: string; status: number; seconds: number }): void {
    this.httpRequests.inc({ dialect: r.dialect, method: r.method, route: r.route, status: String(r.status) });
    this.httpDuration.observe({ method: r.method, route: r.route }, r.seconds);
  }

  private turnEnded(turn: TurnRecord, dialect: TurnDialect): void {
    const labels = { dialect, agent: agentOf(turn), status: turn.status };
    this.turnsFinished.inc(labels);
    if (turn.started_at !== null && turn.completed_at !== null) {
      this.turnDuration.observe(labels, Math.max(0, turn.completed_at - turn.started_at));
    }
    const u = turn.usage;
    if (!u) return;
    const used: Record<(typeof TOKEN_KINDS)[number], number> = {
      input: u.input_tokens,
      cached_input: u.cached_input_tokens,
      output: u.output_tokens,
      reasoning_output: u.reasoning_output_tokens,
    };
    for (const kind of TOKEN_KINDS) if (used[kind] > 0) this.tokens.inc({ dialect, kind }, used[kind]);
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
