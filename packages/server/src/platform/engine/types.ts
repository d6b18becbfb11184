import type { ExecutionEnvironment, Thread, ThreadOptions } from "@codex-agent-api/codex";
import type { ModelStatus } from "./model-health.js";

/** A session's engine thread, held while a turn (or goal housekeeping) runs on it. */
export interface Lease {
  thread: Thread;
  /** Index of the engine process that holds the thread. */
  engine: number;
  release(): void;
}

export interface EngineStats {
  index: number;
  pid: number | undefined;
  /** Threads loaded in the process. */
  threads: number;
  /** Turns running on it. */
  busy: number;
  generation: number;
}

export interface LeaseOptions {
  /** The thread was continued on another instance since a process here loaded it: do not use that copy. */
  stale?: boolean;
  /**
   * Execution servers the thread's commands run on (a sandbox's executor): added to the engine process that holds
   * the thread before it is started or resumed. Such a thread runs under the sandbox, not the engine's permission
   * profile.
   */
  environments?: ExecutionEnvironment[];
  /** Placeholders the thread's commands see, replaced by their secrets in what leaves its sandbox. */
  substitutions?: SecretSubstitution[];
}

/** A secret a sandbox's egress endpoint puts in place of its placeholder (hosts: where, or every allowed host). */
export interface SecretSubstitution {
  placeholder: string;
  value: string;
  hosts: string[] | "any";
}

/** The engine processes, as the domain uses them (the pool, or a stub in tests). */
export interface Engines {
  /** The thread of a session: a new one when `threadId` is null, else the loaded or resumed one. */
  lease(threadId: string | null, options: ThreadOptions, opts?: LeaseOptions): Promise<Lease>;
  /** A request on any engine, for thread state that needs no loaded thread (goals of unloaded threads). */
  call<T>(method: string, params: unknown): Promise<T>;
  /** The session of this thread is gone. */
  forget(threadId: string): void;
  /** Kills an engine process (an unresponsive one, or fault injection); SIGKILL: with everything it started. */
  killEngine(index: number, signal?: NodeJS.Signals): number | undefined;
  /** Kills every engine process (this instance fenced itself: its commands must stop). */
  killAll(): void;
  stats(): EngineStats[];
  /** Whether the engines can reach their model (see model-health.ts). */
  model(): ModelStatus;
  warm(): Promise<void>;
  close(): Promise<void>;
}
