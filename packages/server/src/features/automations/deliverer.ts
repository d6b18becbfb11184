/**
 * Delivers queued automation invocations, on every instance. An invocation is claimed (SKIP LOCKED on PostgreSQL,
 * one UPDATE on SQLite) with a lease, so one instance at a time delivers it; a crash leaves the lease to expire and
 * another claim redelivers it. Redelivery never doubles anything:
 * - the turn an invocation starts has an id derived from the invocation's, so a turn that exists was delivered;
 * - a new-session target tags the session it creates with the invocation (and records it on the invocation at
 *   once): a redelivery finds that session instead of creating a second one.
 * An existing-session target waits, queued, while its session is busy (a turn runs or waits for the client), and
 * is delivered once it is idle.
 */
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import { inputOf, sessionFieldsOf } from "../../domain/automations/target.js";
import type { SessionService } from "../../domain/sessions/service.js";
import type { TurnRunner } from "../../domain/turns/runner.js";
import type { Clock } from "../../kernel/clock.js";
import { ApiError } from "../../kernel/errors.js";
import { Poller } from "../../kernel/poller.js";
import type { Scope } from "../../model/scope.js";
import type { InvocationPatch, InvocationRecord, SessionRecord, Store } from "../../store/types.js";

/** Invocations claimed at once. */
const BATCH = 10;
/** How long a claim is held (a delivery takes milliseconds: it starts a turn, it does not wait for it). */
const LEASE_SECONDS = 120;
/** Transient failures (capacity, a lost database, …) are retried for this long, then the invocation fails. */
const RETRY_FOR_SECONDS = 3600;

/** The turn an invocation starts: the same id at every delivery attempt. */
export const deliveryTurnId = (invocationId: string): string => `turn_${invocationId.replace(/^ainv_/, "")}`;

type Outcome =
  | { kind: "delivered"; session_id: string }
  /** Stays queued until `retry_at` (busy session: at once, the next pass looks again; a transient error: later). */
  | { kind: "wait"; session_id: string | null; retry_at?: number }
  | { kind: "failed"; code: string; message: string; session_id: string | null };

export interface DelivererDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, "workspaceMode">;
  sessions: SessionService;
  runner: TurnRunner;
  instanceId: string;
  pollMs: number;
}

export class AutomationDeliverer {
  private readonly poller: Poller;

  constructor(private readonly deps: DelivererDeps) {
    this.poller = new Poller(deps, "automation delivery failed", () => this.pass());
  }

  private get stopped(): boolean {
    return this.poller.stopped;
  }

  start(): void {
    this.poller.start();
  }

  stop(): Promise<void> {
    return this.poller.stop();
  }

  /** Delivers what is due now (one pass at a time; a kick during one runs another after it). */
  kick(): void {
    this.poller.kick();
  }

  /** Claims and delivers due invocations until none is left or only waiting ones come back. */
  async pass(): Promise<void> {
    const { store, clock, instanceId } = this.deps;
    for (;;) {
      if (this.stopped) return;
      const now = clock.now();
      const batch = await store.claimInvocations(now, instanceId, now + LEASE_SECONDS, BATCH);
      let progress = false;
      for (const inv of batch) {
        if (this.stopped) return; // the lease expires: another claim delivers it
        if (await this.handle(inv)) progress = true;
      }
      if (batch.length < BATCH || !progress) return;
    }
  }

  /** Delivers one claimed invocation and records the outcome; returns whether it left the queue. */
  private async handle(inv: InvocationRecord): Promise<boolean> {
    const { store, clock, logger, instanceId } = this.deps;
    let outcome: Outcome;
    try {
      outcome =
        inv.target.type === "new_session" ? await this.newSession(inv, inv.target) : await this.existing(inv);
    } catch (err) {
      outcome = this.failure(inv, err);
    }
    const now = clock.now();
    let patch: InvocationPatch;
    switch (outcome.kind) {
      case "delivered":
        patch = { status: "completed", session_id: outcome.session_id, error: null, completed_at: now };
        break;
      case "wait":
        // A busy session is looked at again on the next pass (one that becomes idle here kicks one at once).
        patch = {
          next_attempt_at: outcome.retry_at ?? now,
          ...(outcome.session_id ? { session_id: outcome.session_id } : {}),
        };
        break;
      default:
        patch = {
          status: "failed",
          error: { code: outcome.code, message: outcome.message },
          session_id: outcome.session_id,
          completed_at: now,
        };
    }
    const saved = await store.updateClaimedInvocation(inv.id, instanceId, patch);
    if (!saved) {
      logger.warn({ invocation: inv.id }, "automation invocation lease lost before its outcome was recorded");
      return false;
    }
    if (outcome.kind !== "wait") {
      logger.info(
        {
          automation: inv.automation_id,
          invocation: inv.id,
          status: saved.status,
          session: saved.session_id,
        },
        "automation invocation delivered",
      );
    }
    return outcome.kind !== "wait";
  }

  /** A failure: permanent for the client's mistakes (a deleted agent or session), else retried for a while. */
  private failure(inv: InvocationRecord, err: unknown): Outcome {
    const permanent =
      err instanceof ApiError &&
      ["not_found", "bad_request", "unprocessable", "forbidden"].includes(err.kind);
    const message = err instanceof Error ? err.message : String(err);
    if (permanent || this.deps.clock.now() - inv.created_at > RETRY_FOR_SECONDS) {
      const code = err instanceof ApiError ? (err.code ?? err.kind) : "delivery_failed";
      return { kind: "failed", code, message, session_id: inv.session_id };
    }
    this.deps.logger.warn({ invocation: inv.id, err: message }, "automation delivery will be retried");
    const backoff = Math.min(300, 5 * 2 ** Math.min(inv.claims, 10));
    return { kind: "wait", session_id: inv.session_id, retry_at: this.deps.clock.now() + backoff };
  }

  private scope(inv: InvocationRecord): Scope {
    return { projectId: inv.project_id, admin: false };
  }

  private async newSession(
    inv: InvocationRecord,
    target: Extract<InvocationRecord["target"], { type: "new_session" }>,
  ): Promise<Outcome> {
    const { store, sessions, instanceId } = this.deps;
    // A claim before this one may have created the session (and crashed before recording it).
    let sessionId =
      inv.session_id ??
      (inv.claims > 1 ? await store.findInvocationSession(inv.project_id, inv.id) : undefined);
    if (!sessionId) {
      const workspace = this.deps.config.workspaceMode === "shared" ? "shared" : "session";
      const created = await sessions.create(
        this.scope(inv),
        sessionFieldsOf(target, { automation_id: inv.automation_id, automation_invocation_id: inv.id }),
        { workspace, startingTurn: true },
      );
      sessionId = created.id;
      await store.updateClaimedInvocation(inv.id, instanceId, { session_id: sessionId });
    }
    const session = await store.getSession(sessionId);
    if (!session) {
      return {
        kind: "failed",
        code: "session_not_found",
        message: `The session ${sessionId} this invocation created was deleted before its input was sent`,
        session_id: sessionId,
      };
    }
    return this.startTurn(inv, session, inputOf(target.input));
  }

  private async existing(inv: InvocationRecord): Promise<Outcome> {
    if (inv.target.type !== "existing_session") throw new Error("not an existing-session target");
    const session = await this.deps.store.getSession(inv.target.session_id);
    if (!session || session.project_id !== inv.project_id) {
      return {
        kind: "failed",
        code: "session_not_found",
        message: `Session ${inv.target.session_id} not found`,
        session_id: null,
      };
    }
    return this.startTurn(inv, session, { items: [{ type: "text", text: inv.target.instructions }] });
  }

  /** Starts the invocation's turn on an idle session (once: its id is the invocation's); waits while it is busy. */
  private async startTurn(
    inv: InvocationRecord,
    session: SessionRecord,
    input: Parameters<TurnRunner["start"]>[1],
  ): Promise<Outcome> {
    const { store, runner } = this.deps;
    const turnId = deliveryTurnId(inv.id);
    if (await store.getTurn(session.id, turnId)) return { kind: "delivered", session_id: session.id };
    if (session.active_turn_id || runner.isActive(session.id))
      return { kind: "wait", session_id: session.id };
    try {
      await runner.start(session, input, { turnId });
    } catch (err) {
      // Another turn started in between: wait for it to end.
      if (err instanceof ApiError && err.kind === "conflict") return { kind: "wait", session_id: session.id };
      throw err;
    }
    return { kind: "delivered", session_id: session.id };
  }
}
