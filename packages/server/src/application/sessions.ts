/**
 * Sessions (both dialects): what is checked before a session exists (its vaults, its tools under the tool policy,
 * its official `environment`), where it works (the environment's choice, else the request's, else the operator's
 * `--workspace-mode`, whose `auto` lets the dialect say), what is given back when it cannot be made (an environment
 * reserved for it), its first input; then updates, deletion and the input a running session takes (messages,
 * steering, cancel, answers to required actions). Everything in the caller's project.
 */

import type { MessageService, Sent } from "../domain/messages.js";
import type { SessionFields, SessionService, WorkspaceMode } from "../domain/sessions/service.js";
import type { ClientTools, ToolPolicy } from "../domain/tools.js";
import type { TurnRunner } from "../domain/turns/runner.js";
import type { VaultService } from "../domain/vaults/service.js";
import { conflict } from "../kernel/errors.js";
import type { ActionAnswer } from "../model/answers.js";
import type { GoalCaps } from "../model/goal-caps.js";
import type { TurnInput } from "../model/input.js";
import type { SessionRecord, TurnRecord } from "../model/records.js";
import type { Scope } from "../model/scope.js";
import { lockOf } from "../model/session-lock.js";
import type { Page, SessionListOptions } from "../store/types.js";
import { admitted } from "./agents.js";
import {
  chooseEnvironment,
  type EnvironmentChoiceDeps,
  type EnvironmentParam,
} from "./session-environment.js";

/** A session's fields as a client sent them (tools not yet checked). */
export type SessionChanges = Omit<SessionFields, "tools"> & { tools?: ClientTools };

export interface NewSession {
  fields: SessionChanges;
  /** The official dialect's `environment` and `vault_ids` (the template's sessions have neither). */
  official?: { environment: EnvironmentParam; vaultIds: readonly string[] | null | undefined };
  /** The workspace the request asked for, if any. */
  workspace?: WorkspaceMode | undefined;
  /** Where the dialect's sessions work under `--workspace-mode auto`. */
  dialectDefault: WorkspaceMode;
  /** The first input (its turn starts at once), or null. */
  input: TurnInput | null;
  goal?: GoalCaps | null;
}

export interface SessionOperationsDeps {
  sessions: SessionService;
  messages: MessageService;
  runner: Pick<TurnRunner, "isActive" | "waitFor">;
  vaults: Pick<VaultService, "checkVaultIds">;
  tools: ToolPolicy;
  environments: EnvironmentChoiceDeps;
  workspaceMode: "auto" | WorkspaceMode;
}

export class SessionOperations {
  constructor(private readonly deps: SessionOperationsDeps) {}

  /** Makes the session (and sends its first input): the session, and the first input's turn if there was one. */
  async create(scope: Scope, n: NewSession): Promise<{ session: SessionRecord; sent: Sent | null }> {
    const { sessions, messages, workspaceMode } = this.deps;
    const vaultIds = n.official
      ? await this.deps.vaults.checkVaultIds(scope, n.official.vaultIds, "vault_ids")
      : null;
    const fields: SessionFields = await admitted(this.deps.tools, n.fields);
    // The environment is checked (and one made ahead reserved) before the session exists.
    const env =
      n.official && vaultIds
        ? await chooseEnvironment(this.deps.environments, scope, n.official.environment, vaultIds)
        : null;
    if (env) fields.extra = { ...fields.extra, ...env.extra };
    const workspace =
      env?.workspace ?? n.workspace ?? (workspaceMode === "auto" ? n.dialectDefault : workspaceMode);
    const session = await sessions
      .create(scope, fields, {
        workspace,
        startingTurn: n.input !== null,
        ...(env?.directory ? { directory: env.directory } : {}),
        ...(env?.sandboxId ? { sandboxId: env.sandboxId } : {}),
        ...(env?.size ? { size: env.size } : {}),
      })
      .catch(async (err: unknown) => {
        await env?.abandoned();
        throw err;
      });
    await env?.created(session);
    const sent = n.input
      ? await messages.send(session, n.input, { whileBusy: "refuse", goal: n.goal ?? null })
      : null;
    return { session, sent };
  }

  get(scope: Scope, id: string): Promise<SessionRecord> {
    return this.deps.sessions.get(scope, id);
  }

  list(scope: Scope, opts: Omit<SessionListOptions, "project_id">): Promise<Page<SessionRecord>> {
    return this.deps.sessions.list(scope, opts);
  }

  async update(scope: Scope, id: string, f: SessionChanges): Promise<SessionRecord> {
    return this.deps.sessions.update(scope, id, await admitted(this.deps.tools, f));
  }

  /** One of the session's turns (404 otherwise). */
  turn(session: SessionRecord, turnId: string): Promise<TurnRecord> {
    return this.deps.sessions.turn(session, turnId);
  }

  /** Deletes the session; `whileRunning: "refuse"` answers 409 while a turn runs (the official dialect), `"interrupt"` ends it first. */
  async delete(scope: Scope, id: string, opts: { whileRunning: "refuse" | "interrupt" }): Promise<void> {
    if (opts.whileRunning === "refuse") {
      const s = await this.deps.sessions.get(scope, id);
      if (s.active_turn_id) {
        throw conflict(
          "The session has a running turn: cancel it first (agent.session.input.cancel)",
          "session_busy",
        );
      }
    }
    await this.deps.sessions.delete(scope, id);
  }

  /** Whether a turn runs (here, or on another instance: the session says so). */
  busy(session: SessionRecord): boolean {
    return lockOf(session.active_turn_id) !== null || this.deps.runner.isActive(session.id);
  }

  send(session: SessionRecord, input: TurnInput, opts: Parameters<MessageService["send"]>[2]): Promise<Sent> {
    return this.deps.messages.send(session, input, opts);
  }

  steer(session: SessionRecord, input: TurnInput): Promise<TurnRecord | null> {
    return this.deps.messages.steer(session, input);
  }

  cancel(session: SessionRecord): Promise<TurnRecord | null> {
    return this.deps.messages.cancel(session);
  }

  answer(session: SessionRecord, actionId: string, answer: ActionAnswer, turnId?: string): Promise<void> {
    return this.deps.messages.answer(session, actionId, answer, turnId);
  }

  /** Resolves once the turn has ended, wherever it runs. */
  waitFor(sessionId: string, turnId: string): Promise<TurnRecord> {
    return this.deps.runner.waitFor(sessionId, turnId);
  }
}
