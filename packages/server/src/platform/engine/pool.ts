import {
  Codex,
  type ExecutionEnvironment,
  InvalidRequestError,
  type Thread,
  type ThreadOptions,
} from "@codex-agent-api/codex";
import type { Logger } from "pino";
import {
  descendantProcesses,
  killRemaining,
  killTree,
  type ProcessRef,
  waitGone,
} from "../../kernel/process-tree.js";
import { ModelHealth, type ModelStatus } from "./model-health.js";
import type { EngineStats, Engines, Lease, LeaseOptions } from "./types.js";

/** The engine's answer to resuming a thread it has no stored conversation of. */
const NO_ROLLOUT = /no rollout found for thread id/;

export interface EnginePoolOptions {
  size: number;
  /** An engine with more loaded threads than this is restarted once it has no running turn. */
  maxThreadsPerEngine: number;
  codexHome: string;
  env: Record<string, string>;
  codexPath?: string;
  cwd: string;
  logger: Logger;
  /** Refuse a thread the engine does not run under this permission profile (fail closed). */
  requiredProfile?: string;
  /** The model's base URL the engines are configured with (probed for /health); null: none to probe. */
  modelUrl?: string | null;
  /**
   * Called with each engine process just started (before it holds a thread or runs a command): the local backend's
   * limits put it into its slot's group (local-limits.ts).
   */
  confine?: (pid: number, index: number) => Promise<void>;
}

interface Slot {
  index: number;
  codex: Codex | null;
  starting: Promise<Codex> | null;
  /** Threads loaded in the current process of this slot. */
  threads: Set<string>;
  /** Turns running on this slot. */
  busy: number;
  generation: number;
  /** Threads this process holds an outdated copy of (continued elsewhere since): never resumed here again. */
  stale: Set<string>;
  /** Called when busy drops to 0. */
  idleWaiters: Array<() => void>;
  /** Execution environments added to the current process: id → URL. */
  environments: Map<string, string>;
}

/**
 * A pool of app-server processes. Each session's thread lives in one process at a time; a process that dies is
 * respawned on next use (its threads are resumed lazily), and a process that has loaded too many threads is
 * recycled when idle, since the engine never unloads threads by itself.
 */
export class EnginePool implements Engines {
  private readonly slots: Slot[];
  private readonly placement = new Map<string, Slot>();
  private closed = false;
  /** Engines being ended by a recycle (close() waits for them too: none outlives the pool). */
  private readonly retiring = new Set<Promise<void>>();
  /** Whether the engines reach their model: what they report, and a probe of its URL. */
  private readonly modelHealth: ModelHealth;

  constructor(private readonly opts: EnginePoolOptions) {
    this.modelHealth = new ModelHealth({ url: opts.modelUrl ?? null });
    this.slots = Array.from({ length: opts.size }, (_, index) => ({
      index,
      codex: null,
      starting: null,
      threads: new Set(),
      busy: 0,
      generation: 0,
      stale: new Set(),
      idleWaiters: [],
      environments: new Map(),
    }));
  }

  /** Starts every process now (instead of on first use). */
  async warm(): Promise<void> {
    await Promise.all(this.slots.map((s) => this.ensure(s)));
  }

  model(): ModelStatus {
    return this.modelHealth.status();
  }

  stats(): EngineStats[] {
    return this.slots.map((s) => ({
      index: s.index,
      pid: s.codex?.pid,
      threads: s.threads.size,
      busy: s.busy,
      generation: s.generation,
    }));
  }

  /**
   * A thread handle for a session: starts a new thread when `threadId` is null, otherwise finds the process that
   * has it loaded or resumes it on one. `release()` must be called when the turn ends.
   */
  async lease(threadId: string | null, options: ThreadOptions, opts: LeaseOptions = {}): Promise<Lease> {
    if (this.closed) throw new Error("engine pool is closed");
    if (threadId && opts.stale) await this.dropStale(threadId);
    let slot = threadId ? this.placement.get(threadId) : undefined;
    if (slot && !slot.threads.has(threadId!)) slot = undefined;
    slot ??= this.pick(threadId);
    slot.busy++;
    try {
      const codex = await this.ensure(slot);
      for (const env of opts.environments ?? []) await this.addEnvironment(slot, codex, env);
      let thread: Thread | undefined = threadId ? codex.thread(threadId) : undefined;
      if (!thread) {
        thread = threadId ? await this.resume(codex, threadId, options) : await codex.startThread(options);
        slot.threads.add(thread.id);
        this.placement.set(thread.id, slot);
      }
      const required = this.opts.requiredProfile;
      // A thread on an execution environment runs under its sandbox (a container), not the engine's profile.
      if (required && !opts.environments?.length && thread.permissionProfile !== required) {
        throw new Error(
          `the engine runs thread ${thread.id} under permission profile ${JSON.stringify(thread.permissionProfile)}, ` +
            `not "${required}": refusing to run commands without the sandbox`,
        );
      }
      let released = false;
      return {
        thread,
        engine: slot.index,
        release: () => {
          if (released) return;
          released = true;
          this.done(slot);
        },
      };
    } catch (err) {
      this.done(slot);
      throw err;
    }
  }

  /**
   * Resumes a thread on this process. A thread on which no turn ever started has no stored conversation (the engine
   * writes it with the first turn: a session whose first turn was stopped or refused before the engine started it),
   * so no process can resume it: a new thread takes its place (the caller records its id); nothing is lost.
   */
  private async resume(codex: Codex, threadId: string, options: ThreadOptions): Promise<Thread> {
    try {
      return await codex.resumeThread(threadId, options);
    } catch (err) {
      if (!(err instanceof InvalidRequestError) || !NO_ROLLOUT.test(err.message)) throw err;
      this.opts.logger.warn({ thread: threadId }, "thread has no stored conversation: starting a new one");
      return codex.startThread(options);
    }
  }

  /** Makes an execution environment known to the slot's current process (once per process and URL). */
  private async addEnvironment(slot: Slot, codex: Codex, env: ExecutionEnvironment): Promise<void> {
    const known = slot.environments.get(env.environmentId);
    if (known === env.execServerUrl) return;
    // The engine keeps an id's first connection: a new URL must come with a new id (the caller's to choose).
    if (known !== undefined)
      throw new Error(`execution environment ${env.environmentId} was added with another URL`);
    await codex.addEnvironment(env);
    slot.environments.set(env.environmentId, env.execServerUrl);
  }

  private done(slot: Slot): void {
    slot.busy--;
    if (slot.busy === 0) for (const w of slot.idleWaiters.splice(0)) w();
    this.maybeRecycle(slot);
  }

  /**
   * The thread was continued elsewhere: a process that has it loaded holds an outdated copy (it would ignore the
   * newer rollout and write over it). It is forgotten here and resumed on another process; when every process has
   * a stale copy, the one it is placed on is restarted as soon as it is idle.
   */
  private async dropStale(threadId: string): Promise<void> {
    const slot = this.placement.get(threadId);
    if (!slot || !slot.threads.has(threadId)) return;
    this.placement.delete(threadId);
    slot.threads.delete(threadId);
    slot.stale.add(threadId);
    if (this.slots.some((s) => !s.stale.has(threadId))) return;
    while (slot.busy > 0) await new Promise<void>((resolve) => slot.idleWaiters.push(resolve));
    if (slot.stale.has(threadId)) this.restart(slot, "a thread it holds was continued on another instance");
  }

  /** A request on any running engine (for thread state that needs no loaded thread, e.g. goals). */
  async call<T>(method: string, params: unknown): Promise<T> {
    const codex = await this.ensure(this.slots[0]!);
    return codex.request<T>(method, params);
  }

  /** Forget a thread (its session was deleted). */
  forget(threadId: string): void {
    const slot = this.placement.get(threadId);
    this.placement.delete(threadId);
    if (!slot) return;
    slot.threads.delete(threadId);
    void slot.codex?.unloadThread(threadId);
  }

  /** Ends every engine process; resolves once they, and everything they started, are gone. */
  async close(): Promise<void> {
    this.closed = true;
    await this.modelHealth.close();
    await Promise.all(
      this.slots.map(async (s) => {
        const codex = s.codex ?? (s.starting ? await s.starting.catch(() => null) : null);
        if (!codex) return;
        // An engine that exits (or is killed for lingering) may leave processes it started behind (a sandbox, a
        // command still running): they are collected until it has exited (it may start one meanwhile), and ended.
        const started = new Map<string, ProcessRef>();
        const collect = () => {
          for (const p of codex.pid ? descendantProcesses(codex.pid) : [])
            started.set(`${p.pid}:${p.start}`, p);
        };
        collect();
        const collecting = setInterval(collect, 50);
        try {
          await codex.close();
        } finally {
          clearInterval(collecting);
        }
        const left = killRemaining([...started.values()]);
        if (left === 0) return;
        this.opts.logger.warn({ engine: s.index, processes: left }, "ending what an engine left running");
        const stuck = await waitGone([...started.values()], 5000);
        if (stuck.length > 0) {
          this.opts.logger.error({ engine: s.index, pids: stuck.map((p) => p.pid) }, "processes did not end");
        }
      }),
    );
    await Promise.all([...this.retiring]);
  }

  /**
   * Kills an engine process (an unresponsive one, or fault injection). SIGKILL kills everything it started too
   * (sandboxes and the commands they run would outlive it: nothing would watch them any more); another signal goes
   * to the engine process alone.
   */
  killEngine(index: number, signal: NodeJS.Signals = "SIGKILL"): number | undefined {
    const pid = this.slots[index]?.codex?.pid;
    if (pid && signal === "SIGKILL") killTree(pid);
    else if (pid) process.kill(pid, signal);
    return pid;
  }

  /** Kills every engine process with everything it started (sandboxes, helpers, the commands they run). */
  killAll(): void {
    for (const s of this.slots) {
      const pid = s.codex?.pid;
      if (pid) killTree(pid);
    }
  }

  private pick(threadId: string | null): Slot {
    const usable = this.slots.filter((s) => !threadId || !s.stale.has(threadId));
    let best = usable[0] ?? this.slots[0]!;
    for (const s of usable) {
      if (s.busy < best.busy || (s.busy === best.busy && s.threads.size < best.threads.size)) best = s;
    }
    return best;
  }

  private ensure(slot: Slot): Promise<Codex> {
    if (slot.codex && !slot.codex.closed) return Promise.resolve(slot.codex);
    if (slot.starting) return slot.starting;
    // No engine starts once close() has begun (a lease or warm-up that began before would start one it never ends).
    if (this.closed) return Promise.reject(new Error("engine pool is closed"));
    const generation = ++slot.generation;
    slot.starting = Codex.start({
      codexHome: this.opts.codexHome,
      env: this.opts.env,
      inheritEnv: false,
      cwd: this.opts.cwd,
      ...(this.opts.codexPath ? { codexPath: this.opts.codexPath } : {}),
      clientInfo: { name: "codex_agent_api", title: "codex-agent-api", version: "0.1.0" },
      onNotification: (n) => this.modelHealth.observe(n.method, n.params),
      onExit: (err) => {
        if (slot.generation !== generation) return;
        this.opts.logger.error(
          { engine: slot.index, err: err.message, stderr: err.stderrTail },
          "engine exited",
        );
        this.reset(slot);
        if (!this.closed) {
          void this.ensure(slot).catch((e: unknown) =>
            this.opts.logger.error({ engine: slot.index, err: String(e) }, "engine respawn failed"),
          );
        }
      },
    }).then(
      async (codex) => {
        if (this.opts.confine && codex.pid !== undefined) {
          await this.opts
            .confine(codex.pid, slot.index)
            .catch((err: unknown) =>
              this.opts.logger.warn({ engine: slot.index, err: String(err) }, "engine limits not applied"),
            );
        }
        slot.codex = codex;
        slot.starting = null;
        this.opts.logger.info({ engine: slot.index, pid: codex.pid }, "engine started");
        return codex;
      },
      (err: unknown) => {
        slot.starting = null;
        throw err;
      },
    );
    return slot.starting;
  }

  private reset(slot: Slot): void {
    for (const id of slot.threads) if (this.placement.get(id) === slot) this.placement.delete(id);
    slot.threads.clear();
    slot.stale.clear();
    slot.environments.clear();
    slot.codex = null;
  }

  private maybeRecycle(slot: Slot): void {
    if (this.closed || slot.busy > 0 || slot.threads.size <= this.opts.maxThreadsPerEngine || !slot.codex)
      return;
    this.restart(slot, "too many loaded threads");
  }

  /** Ends the slot's process (an idle one); the next lease starts a fresh one. */
  private restart(slot: Slot, why: string): void {
    const codex = slot.codex;
    this.opts.logger.info({ engine: slot.index, threads: slot.threads.size, why }, "recycling engine");
    slot.generation++;
    this.reset(slot);
    if (!codex) return;
    const ending: Promise<void> = codex
      .close()
      .catch((err: unknown) =>
        this.opts.logger.warn({ engine: slot.index, err: String(err) }, "a recycled engine did not close"),
      )
      .finally(() => this.retiring.delete(ending));
    this.retiring.add(ending);
  }
}
