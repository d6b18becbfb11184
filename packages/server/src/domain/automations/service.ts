/**
 * Automations: saved schedules (a five-field cron expression in a timezone, or one time) whose invocations start a
 * new session or notify an existing one, within the caller's project. This is the API side; the scheduler fires
 * due occurrences and the deliverer delivers invocations (scheduler.ts, deliverer.ts).
 */

import type { Clock } from "../../kernel/clock.js";
import { badRequest, conflict, notFound } from "../../kernel/errors.js";
import { isUnixSeconds, MAX_UNIX_SECONDS, MAX_UNIX_SECONDS_ISO } from "../../kernel/unix-seconds.js";
import type { Scope } from "../../model/scope.js";
import type {
  AutomationCreatedBy,
  AutomationPatch,
  AutomationRecord,
  InvocationRecord,
  ListOptions,
  Page,
  Queries,
  Store,
} from "../../store/types.js";
import type { AgentService } from "../agents.js";
import type { SessionService } from "../sessions/service.js";
import type { ToolPolicy } from "../tools.js";
import { newAutomationId, newInvocationId } from "./ids.js";
import { checkSchedule, nextRunOf } from "./schedule.js";
import { normalizeTarget, type TargetParam } from "./target.js";

export type ScheduleParam =
  | { type: "periodic"; expression: string; timezone: string }
  | { type: "once"; run_at: number };

export interface AutomationCreate {
  name: string;
  metadata?: Record<string, string> | undefined;
  schedule: ScheduleParam;
  target: TargetParam;
}

export interface AutomationUpdate {
  name?: string | undefined;
  metadata?: Record<string, string> | undefined;
  expression?: string | undefined;
  timezone?: string | undefined;
  run_at?: number | undefined;
  target?: TargetParam | undefined;
}

export interface AutomationDeps {
  store: Store;
  clock: Clock;
  agents: AgentService;
  sessions: SessionService;
  /** The tool policy an inline agent's tools pass (domain/tools.ts). */
  tools: ToolPolicy;
  /** An invocation was queued: deliver it soon. */
  onQueued: () => void;
}

export class AutomationService {
  constructor(private readonly deps: AutomationDeps) {}

  private targetContext(scope: Scope) {
    const { agents, sessions, tools } = this.deps;
    return { scope, agents, sessions, tools };
  }

  /**
   * Saves an active automation; it does not run now (its first occurrence is the next one after now). `createdBy`:
   * a developer through the API, or an agent through its automations tool.
   */
  async create(
    scope: Scope,
    f: AutomationCreate,
    createdBy: AutomationCreatedBy = { type: "developer" },
  ): Promise<AutomationRecord> {
    const now = this.deps.clock.now();
    const name = checkName(f.name);
    const target = await normalizeTarget(f.target, this.targetContext(scope));
    const s = f.schedule;
    const schedule =
      s.type === "periodic"
        ? {
            expression: s.expression.trim(),
            timezone: s.timezone,
            run_at: null,
            next_run_at: checkSchedule(s.expression.trim(), s.timezone, now),
          }
        : { expression: null, timezone: null, run_at: futureRunAt(s.run_at, now), next_run_at: s.run_at };
    const a: AutomationRecord = {
      id: newAutomationId(),
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      name,
      metadata: f.metadata ?? {},
      type: s.type,
      ...schedule,
      status: "active",
      target,
      created_by: createdBy,
    };
    await this.deps.store.insertAutomation(a);
    return a;
  }

  /** The automation, if it belongs to the caller's project (another project's is "not found" too). */
  async get(scope: Scope, id: string): Promise<AutomationRecord> {
    const a = await this.deps.store.getAutomation(id);
    if (!a || a.project_id !== scope.projectId) throw notFound(`Automation ${id} not found`, "automation_id");
    return a;
  }

  list(
    scope: Scope,
    opts: ListOptions & { session_id?: string | undefined },
  ): Promise<Page<AutomationRecord>> {
    const { session_id, ...rest } = opts;
    return this.deps.store.listAutomations({
      ...rest,
      project_id: scope.projectId,
      ...(session_id !== undefined ? { session_id } : {}),
    });
  }

  /** Changes the given fields; target and metadata replace the whole field. */
  async update(scope: Scope, id: string, f: AutomationUpdate): Promise<AutomationRecord> {
    await this.get(scope, id);
    // The target is checked before the lock (it reads agents and sessions).
    const target = f.target ? await normalizeTarget(f.target, this.targetContext(scope)) : undefined;
    return this.locked(scope, id, async (a, tx) => {
      const now = this.deps.clock.now();
      const patch: AutomationPatch = {};
      if (f.name !== undefined) patch.name = checkName(f.name);
      if (f.metadata !== undefined) patch.metadata = f.metadata;
      if (target) {
        if (target.type !== a.target.type) {
          throw badRequest(
            `'target.type' cannot change (this automation's target is ${a.target.type})`,
            "target.type",
          );
        }
        patch.target = target;
      }
      if (f.expression !== undefined || f.timezone !== undefined) {
        if (a.type !== "periodic") {
          throw badRequest(
            `'${f.expression !== undefined ? "expression" : "timezone"}' is only accepted for periodic automations`,
            f.expression !== undefined ? "expression" : "timezone",
          );
        }
        const expression = (f.expression ?? a.expression ?? "").trim();
        const timezone = f.timezone ?? a.timezone ?? "UTC";
        const next = checkSchedule(expression, timezone, now);
        patch.expression = expression;
        patch.timezone = timezone;
        if (a.status === "active") patch.next_run_at = next;
      }
      if (f.run_at !== undefined) {
        if (a.type !== "once")
          throw badRequest("'run_at' is only accepted for one-time automations", "run_at");
        if (fired(a)) {
          throw conflict(
            "'run_at' can only change before the automation's scheduled invocation exists",
            "automation_already_invoked",
          );
        }
        patch.run_at = futureRunAt(f.run_at, now);
        patch.next_run_at = patch.run_at;
      }
      if (Object.keys(patch).length === 0) return a;
      patch.updated_at = now;
      return this.saved(await tx.updateAutomation(a.id, patch), id);
    });
  }

  /** Deletes the automation and its invocations (not any session it started). */
  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id);
    if (!(await this.deps.store.deleteAutomation(id))) {
      throw notFound(`Automation ${id} not found`, "automation_id");
    }
  }

  /**
   * Pauses scheduled delivery: no occurrence fires while paused, and a scheduled invocation still waiting is held
   * (manual runs are not). A running session is not stopped.
   */
  async pause(scope: Scope, id: string): Promise<AutomationRecord> {
    return this.locked(scope, id, async (a, tx) => {
      if (a.status === "paused") return a;
      if (a.status === "completed" && !(await tx.hasQueuedInvocation(a.id))) {
        throw conflict(
          "The automation has completed: there is nothing left to pause",
          "automation_completed",
        );
      }
      return this.saved(
        // next_run_at stays: a one-time automation paused before its occurrence still has it to fire.
        await tx.updateAutomation(a.id, { status: "paused", updated_at: this.deps.clock.now() }),
        id,
      );
    });
  }

  /**
   * Resumes scheduled delivery from now on (occurrences that fell in the pause are not fired). A one-time
   * automation whose occurrence has not fired needs a run_at still in the future; one that fired goes back to
   * completed and its held invocation is delivered.
   */
  async resume(scope: Scope, id: string): Promise<AutomationRecord> {
    const resumed = await this.locked(scope, id, async (a, tx) => {
      if (a.status !== "paused") return a;
      const now = this.deps.clock.now();
      if (a.type === "once") {
        if (fired(a)) {
          return this.saved(await tx.updateAutomation(a.id, { status: "completed", updated_at: now }), id);
        }
        if (a.run_at === null || a.run_at <= now) {
          throw badRequest(
            "This one-time automation's run_at has passed: set a future run_at (update) before resuming it",
            "run_at",
          );
        }
      }
      return this.saved(
        await tx.updateAutomation(a.id, {
          status: "active",
          next_run_at: nextRunOf(a, now),
          updated_at: now,
        }),
        id,
      );
    });
    this.deps.onQueued();
    return resumed;
  }

  /** Queues a manual run now (whatever the schedule and status; the schedule does not change). */
  async invoke(scope: Scope, id: string): Promise<InvocationRecord> {
    const a = await this.get(scope, id);
    const now = this.deps.clock.now();
    const inv: InvocationRecord = {
      id: newInvocationId(),
      automation_id: a.id,
      project_id: a.project_id,
      created_at: now,
      scheduled_at: null,
      source: "manual",
      snapshot: null,
      target: a.target,
      status: "queued",
      skip_reason: null,
      session_id: null,
      error: null,
      claims: 0,
      next_attempt_at: now,
      lease_owner: null,
      lease_until: null,
      completed_at: null,
    };
    await this.deps.store.insertInvocation(inv);
    this.deps.onQueued();
    return inv;
  }

  async invocations(scope: Scope, id: string, opts: ListOptions): Promise<Page<InvocationRecord>> {
    await this.get(scope, id);
    return this.deps.store.listInvocations(id, opts);
  }

  async invocation(scope: Scope, automationId: string, id: string): Promise<InvocationRecord> {
    await this.get(scope, automationId);
    const inv = await this.deps.store.getInvocation(id);
    if (!inv || inv.automation_id !== automationId) {
      throw notFound(`Invocation ${id} not found`, "invocation_id");
    }
    return inv;
  }

  /** Runs fn on the automation locked in a transaction (no interleaving with the scheduler firing it). */
  private locked<T>(
    scope: Scope,
    id: string,
    fn: (a: AutomationRecord, tx: Queries) => Promise<T>,
  ): Promise<T> {
    return this.deps.store.transaction(async (tx) => {
      const a = await tx.lockAutomation(id);
      if (!a || a.project_id !== scope.projectId)
        throw notFound(`Automation ${id} not found`, "automation_id");
      return fn(a, tx);
    });
  }

  private saved(a: AutomationRecord | undefined, id: string): AutomationRecord {
    if (!a) throw notFound(`Automation ${id} not found`, "automation_id");
    return a;
  }
}

/** A one-time automation whose occurrence has fired (it has no next run left). */
const fired = (a: AutomationRecord): boolean => a.type === "once" && a.next_run_at === null;

function checkName(name: string): string {
  if (!name.trim()) throw badRequest("'name' must not be empty", "name");
  return name;
}

function futureRunAt(runAt: number, now: number): number {
  if (!isUnixSeconds(runAt)) {
    throw badRequest(
      `'run_at' must be a Unix timestamp in whole seconds, at most ${MAX_UNIX_SECONDS} (${MAX_UNIX_SECONDS_ISO})`,
      "run_at",
    );
  }
  if (runAt <= now) throw badRequest("'run_at' must be a future Unix timestamp in seconds", "run_at");
  return runAt;
}
