/**
 * The durable store: one asynchronous interface, implemented by the embedded SQLite store and the PostgreSQL
 * store, both checked by the same contract suite (records: records.ts).
 */

import type { ListOptions, Page } from "../model/pages.js";
import type {
  AgentRecord,
  Appended,
  AutomationRecord,
  EnvironmentRecord,
  EnvironmentTemplateRecord,
  EventRecord,
  FilePurpose,
  FileRecord,
  GoalRecord,
  GoalStatus,
  IdempotencyRecord,
  InvocationRecord,
  ItemRecord,
  ItemState,
  KeyRecord,
  NewEvent,
  RolloutChunk,
  SealedKind,
  SessionRecord,
  TurnEndLog,
  TurnRecord,
  TurnStatus,
  VaultCredentialRecord,
  VaultRecord,
  VaultStatus,
  WebhookDeliveryRecord,
  WebhookDeliveryStatus,
  WebhookEndpointRecord,
} from "../model/records.js";

export type * from "../model/pages.js";
export type * from "../model/records.js";
export { FencedError } from "./fenced.js";

export interface SessionListOptions extends ListOptions {
  project_id: string;
  agent_id?: string;
  metadata?: Record<string, string>;
}

export interface ItemListOptions extends ListOptions {
  turn_id?: string;
  /** Only items of these turns (e.g. a subagent's). */
  turn_ids?: readonly string[];
  /** Only items of the session's own turns, not of its subagents' (each has its own history). */
  root_only?: boolean;
  /** Leave out items of these engine types (e.g. the user's own messages). */
  exclude_types?: readonly string[];
  /** Only these states (default: all). */
  states?: readonly ItemState[];
  /**
   * The caller may not need every item's data (it caches renderings of finished items): the store may load
   * `data` on first access instead of with the page.
   */
  lazy_data?: boolean;
}

/** What {@link Queries.copyHistory} copies. */
export interface HistoryCopy {
  turn_ids: readonly string[];
  /** Only items at or before this ordinal of the source session (null: all of the turns' items). */
  through_ordinal: number | null;
}

export type SessionPatch = Partial<Omit<SessionRecord, "id" | "project_id" | "created_at">>;
export type TurnPatch = Partial<Omit<TurnRecord, "id" | "session_id" | "created_at">>;

/** What a turn's end writes (see `endTurn`). */
export interface TurnEndWrite {
  /** The `status` set on the data of the turn's items still open (they become `incomplete`). */
  itemStatus: string;
  turn: TurnPatch;
  session: SessionPatch;
  rollout?: RolloutChunk | null;
}

export type AgentPatch = Partial<Omit<AgentRecord, "id" | "project_id" | "created_at">>;
export type AutomationPatch = Partial<Omit<AutomationRecord, "id" | "project_id" | "created_at" | "type">>;
export type InvocationPatch = Partial<
  Pick<InvocationRecord, "status" | "session_id" | "error" | "next_attempt_at" | "completed_at">
>;
export type WebhookEndpointPatch = Partial<Omit<WebhookEndpointRecord, "id" | "project_id" | "created_at">>;
export type WebhookDeliveryPatch = Partial<
  Pick<
    WebhookDeliveryRecord,
    | "status"
    | "next_attempt_at"
    | "last_attempt_at"
    | "last_status_code"
    | "last_error"
    | "delivered_at"
    | "attempt_log"
  >
>;

export type EnvironmentPatch = Partial<Omit<EnvironmentRecord, "id" | "project_id" | "created_at" | "type">>;
export type EnvironmentTemplatePatch = Partial<
  Omit<EnvironmentTemplateRecord, "id" | "project_id" | "created_at">
>;
export type VaultPatch = Partial<Pick<VaultRecord, "name" | "metadata" | "status" | "updated_at">>;
export type VaultCredentialPatch = Partial<
  Pick<VaultCredentialRecord, "name" | "metadata" | "status" | "auth" | "secret" | "updated_at">
>;

/** Filters of vault and credential lists (metadata: every pair must match; status: any of them). */
export interface VaultListOptions extends ListOptions {
  metadata?: Record<string, string>;
  status?: readonly VaultStatus[];
}

/** Files of a project; expired ones are left out when `unexpired_at` (now) is given. */
export interface FileListOptions extends ListOptions {
  project_id: string;
  purpose?: FilePurpose;
  unexpired_at?: number;
}

/** Every data operation. Inside `transaction()` the same operations run in that transaction. */
export interface Queries {
  // api keys
  insertKey(k: KeyRecord): Promise<void>;
  getKey(id: string): Promise<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  /** Revokes an active key (false: no such active key). On PostgreSQL it also tells every instance (NOTIFY). */
  revokeKey(id: string, at: number): Promise<boolean>;
  /**
   * Whether any key was ever made, revoked ones included: from then on every request needs a key (revoking the last
   * one must not open the server again).
   */
  hasKeys(): Promise<boolean>;
  /** Of these key ids, those that are not active keys (revoked, or gone). */
  inactiveKeys(ids: readonly string[]): Promise<string[]>;

  // agents
  insertAgent(a: AgentRecord): Promise<void>;
  getAgent(id: string): Promise<AgentRecord | undefined>;
  updateAgent(id: string, patch: AgentPatch): Promise<AgentRecord | undefined>;
  deleteAgent(id: string): Promise<boolean>;
  listAgents(opts: ListOptions & { project_id: string }): Promise<Page<AgentRecord>>;

  // sessions
  insertSession(s: SessionRecord): Promise<void>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /** Changes the given fields; returns the updated record (undefined: no such session). */
  updateSession(id: string, patch: SessionPatch): Promise<SessionRecord | undefined>;
  /**
   * Makes `turnId` the session's active turn (with the other fields of `patch`) if it has none, and bumps its
   * `lease_epoch` (the new claim's fencing token); returns the updated record, or undefined when another turn is
   * active (or the session is gone).
   */
  claimSession(id: string, turnId: string, patch: SessionPatch): Promise<SessionRecord | undefined>;
  /**
   * A turn's start in one step: `session` claimed for `turn` as `claimSession` does (with `patch`), the turn inserted,
   * and its first events appended at `at`, fenced by the claim (`startEvents`: `turn.started`, then `session.status`
   * with the session as claimed; the status's webhook event is made from `session` with `patch` over it). undefined
   * when another turn is active or the session is gone: nothing is written. One statement on PostgreSQL; its steps in
   * one transaction on SQLite.
   */
  startTurn(
    session: SessionRecord,
    turn: TurnRecord,
    patch: SessionPatch,
    at: number,
  ): Promise<{ session: SessionRecord; appended: Appended[] } | undefined>;
  /**
   * Gives back the claim `turnId` holds (active_turn_id = null, plus `patch`): the session after it, or undefined when
   * the claim is not held any more (taken over and claimed again meanwhile) or the session is gone.
   */
  releaseSession(id: string, turnId: string, patch: SessionPatch): Promise<SessionRecord | undefined>;
  /** Deletes the session and everything that belongs to it (turns, items, events, goal, idempotency). */
  deleteSession(id: string): Promise<boolean>;
  listSessions(opts: SessionListOptions): Promise<Page<SessionRecord>>;
  countSessions(projectId?: string): Promise<number>;
  /** Sessions whose last_active_at < before and that have no running turn, oldest first. */
  listIdleSessionsBefore(before: number, limit: number): Promise<SessionRecord[]>;
  /** Sessions with status in_progress/requires_action or an active_turn_id (start-up recovery). */
  listBusySessions(): Promise<SessionRecord[]>;

  // turns
  insertTurn(t: TurnRecord): Promise<void>;
  getTurn(sessionId: string, turnId: string): Promise<TurnRecord | undefined>;
  updateTurn(sessionId: string, turnId: string, patch: TurnPatch): Promise<TurnRecord | undefined>;
  listTurns(sessionId: string, opts: ListOptions & { status?: TurnStatus }): Promise<Page<TurnRecord>>;

  // items (written with events: see appendEvents)
  listItems(sessionId: string, opts: ItemListOptions): Promise<Page<ItemRecord>>;
  /** Items of a turn still `started`: marks them `incomplete` with `status` set on their data; returns them. */
  closeOpenItems(sessionId: string, turnId: string, status: string): Promise<ItemRecord[]>;
  /**
   * A turn's end in one step: its open items closed as `closeOpenItems` does (with `end.itemStatus`), the turn and the
   * session patched, what the engine appended to the thread's rollout during the turn stored with them (so the
   * session is never idle without it: another instance may run its next turn), and its events appended, fenced
   * (`endEvents`: `log.before`, an `item.completed` for each item it closed, `log.turn`, then `session.status` with
   * the session as patched). The closed items in order, the session as patched and the events appended; when the
   * session is gone, nothing is appended (`session` undefined). One statement on PostgreSQL; its steps in one
   * transaction on SQLite, which shares no rollouts (one instance) and refuses a chunk.
   */
  endTurn(
    sessionId: string,
    turnId: string,
    end: TurnEndWrite,
    log: TurnEndLog,
    fence?: number,
  ): Promise<{ closed: ItemRecord[]; session: SessionRecord | undefined; appended: Appended[] }>;
  /**
   * Copies the items of these turns of one session (its own turns, not its subagents'; with `through_ordinal`, only
   * those at or before it), in their order, after the other session's items, and those turns (unless it has them),
   * as they are; no event is logged. Returns how many items were copied (a fork's history: features/checkpoints/service.ts).
   */
  copyHistory(fromSessionId: string, toSessionId: string, opts: HistoryCopy): Promise<number>;

  // event log
  /**
   * Assigns seq = last + 1, … in order and persists the events (and their item writes) before returning. With
   * `fence`, nothing is written (a {@link FencedError}) unless the session's lease_epoch is still `fence`. The webhook
   * outbox is written with them: each event that is a webhook event (store/outbox.ts) gets one pending delivery per
   * webhook endpoint of the session's project subscribed to its type, in the same transaction.
   */
  appendEvents(sessionId: string, events: NewEvent[], fence?: number): Promise<Appended[]>;
  /** Events with seq > afterSeq, ascending, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRecord[]>;
  lastEventSeq(sessionId: string): Promise<number>;
  /** The seq of the first event of a turn (its start), if any. */
  firstEventSeqOfTurn(sessionId: string, turnId: string): Promise<number | undefined>;

  // goals
  getGoal(sessionId: string): Promise<GoalRecord | undefined>;
  putGoal(g: GoalRecord): Promise<void>;
  deleteGoal(sessionId: string): Promise<boolean>;
  listGoals(status?: GoalStatus): Promise<GoalRecord[]>;

  // environments this server prepares, and their templates
  insertEnvironment(e: EnvironmentRecord): Promise<void>;
  getEnvironment(id: string): Promise<EnvironmentRecord | undefined>;
  updateEnvironment(id: string, patch: EnvironmentPatch): Promise<EnvironmentRecord | undefined>;
  /**
   * Gives an environment that belongs to no session yet to `sessionId` (atomic: of two sessions, one gets it);
   * returns it, or undefined when it is gone or already taken.
   */
  attachEnvironment(id: string, sessionId: string, at: number): Promise<EnvironmentRecord | undefined>;
  listEnvironments(opts: ListOptions & { project_id: string }): Promise<Page<EnvironmentRecord>>;
  /** Environments still being prepared, oldest first (start-up recovery). */
  listPendingEnvironments(limit: number): Promise<EnvironmentRecord[]>;
  insertEnvironmentTemplate(t: EnvironmentTemplateRecord): Promise<void>;
  getEnvironmentTemplate(id: string): Promise<EnvironmentTemplateRecord | undefined>;
  updateEnvironmentTemplate(
    id: string,
    patch: EnvironmentTemplatePatch,
  ): Promise<EnvironmentTemplateRecord | undefined>;
  deleteEnvironmentTemplate(id: string): Promise<boolean>;
  listEnvironmentTemplates(
    opts: ListOptions & { project_id: string },
  ): Promise<Page<EnvironmentTemplateRecord>>;

  // vaults and their credentials
  insertVault(v: VaultRecord): Promise<void>;
  getVault(id: string): Promise<VaultRecord | undefined>;
  updateVault(id: string, patch: VaultPatch): Promise<VaultRecord | undefined>;
  /** Deletes the vault and its credentials. */
  deleteVault(id: string): Promise<boolean>;
  listVaults(opts: VaultListOptions & { project_id: string }): Promise<Page<VaultRecord>>;
  insertVaultCredential(c: VaultCredentialRecord): Promise<void>;
  getVaultCredential(id: string): Promise<VaultCredentialRecord | undefined>;
  updateVaultCredential(id: string, patch: VaultCredentialPatch): Promise<VaultCredentialRecord | undefined>;
  deleteVaultCredential(id: string): Promise<boolean>;
  listVaultCredentials(vaultId: string, opts: VaultListOptions): Promise<Page<VaultCredentialRecord>>;
  /** The active credentials of these vaults (of active vaults), oldest first. */
  credentialsOfVaults(vaultIds: readonly string[]): Promise<VaultCredentialRecord[]>;

  // values sealed with the service's key ring (key rotation)
  /** Up to `limit` sealed values of a kind that do not start with `prefix` (sealed with another key). */
  listSealed(
    kind: SealedKind,
    notPrefix: string,
    limit: number,
  ): Promise<Array<{ id: string; sealed: string }>>;
  /** Replaces a sealed value if it is still `from` (a concurrent change wins); returns whether it did. */
  replaceSealed(kind: SealedKind, id: string, from: string, to: string): Promise<boolean>;

  // idempotency
  getIdempotency(scope: string, key: string): Promise<IdempotencyRecord | undefined>;
  putIdempotency(r: IdempotencyRecord): Promise<void>;
  /** Forgets keys recorded before `before`; returns how many. */
  expireIdempotency(before: number): Promise<number>;

  // automations
  insertAutomation(a: AutomationRecord): Promise<void>;
  getAutomation(id: string): Promise<AutomationRecord | undefined>;
  /**
   * The automation, locked until the transaction ends (PostgreSQL: FOR UPDATE; SQLite: the transaction holds the
   * write lock): a change made from it cannot interleave with the scheduler firing it. Call inside a transaction.
   */
  lockAutomation(id: string): Promise<AutomationRecord | undefined>;
  updateAutomation(id: string, patch: AutomationPatch): Promise<AutomationRecord | undefined>;
  /** Deletes the automation and its invocations. */
  deleteAutomation(id: string): Promise<boolean>;
  /** `session_id`: only automations whose target is that existing session. */
  listAutomations(
    opts: ListOptions & { project_id: string; session_id?: string },
  ): Promise<Page<AutomationRecord>>;
  /**
   * Active automations whose next_run_at <= now (oldest first, at most `limit`), locked until the transaction ends;
   * on PostgreSQL rows another transaction holds are skipped (FOR UPDATE SKIP LOCKED). Call inside a transaction.
   */
  lockDueAutomations(now: number, limit: number): Promise<AutomationRecord[]>;

  // automation invocations
  /**
   * Inserts the invocation unless the automation already has one for its scheduled_at (manual runs, without one,
   * always insert): returns whether it did.
   */
  insertInvocation(i: InvocationRecord): Promise<boolean>;
  getInvocation(id: string): Promise<InvocationRecord | undefined>;
  listInvocations(automationId: string, opts: ListOptions): Promise<Page<InvocationRecord>>;
  /** Whether an invocation of the automation still waits to be delivered (status queued). */
  hasQueuedInvocation(automationId: string): Promise<boolean>;
  /**
   * Atomically claims up to `limit` queued invocations due at `now` (next_attempt_at <= now) whose lease is free or
   * expired, oldest first: sets lease_owner = owner and lease_until, counts the claim. Scheduled invocations of a
   * paused automation are not claimed (manual runs are). On PostgreSQL rows locked elsewhere are skipped.
   */
  claimInvocations(
    now: number,
    owner: string,
    leaseUntil: number,
    limit: number,
  ): Promise<InvocationRecord[]>;
  /**
   * Changes an invocation `owner` has claimed, if it still holds the lease (undefined: it does not). A status other
   * than queued, or a next_attempt_at, releases the lease.
   */
  updateClaimedInvocation(
    id: string,
    owner: string,
    patch: InvocationPatch,
  ): Promise<InvocationRecord | undefined>;
  /** The session created for a new-session invocation (tagged extra.automation_invocation_id), if there is one. */
  findInvocationSession(projectId: string, invocationId: string): Promise<string | undefined>;

  // webhook endpoints and the outbox (its rows are written by appendEvents: see store/outbox.ts)
  insertWebhookEndpoint(e: WebhookEndpointRecord): Promise<void>;
  getWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | undefined>;
  updateWebhookEndpoint(id: string, patch: WebhookEndpointPatch): Promise<WebhookEndpointRecord | undefined>;
  /** Deletes the endpoint and its deliveries. */
  deleteWebhookEndpoint(id: string): Promise<boolean>;
  listWebhookEndpoints(opts: ListOptions & { project_id: string }): Promise<Page<WebhookEndpointRecord>>;
  getWebhookDelivery(id: string): Promise<WebhookDeliveryRecord | undefined>;
  listWebhookDeliveries(
    endpointId: string,
    opts: ListOptions & { status?: WebhookDeliveryStatus },
  ): Promise<Page<WebhookDeliveryRecord>>;
  /**
   * Atomically claims up to `limit` pending deliveries due at `now` whose lease is free or expired, oldest first:
   * sets lease_owner = owner and lease_until, counts the attempt. On PostgreSQL rows locked elsewhere are skipped.
   */
  claimWebhookDeliveries(
    now: number,
    owner: string,
    leaseUntil: number,
    limit: number,
  ): Promise<WebhookDeliveryRecord[]>;
  /** Records what a claimed attempt did, if `owner` still holds the lease (which this releases). */
  updateClaimedWebhookDelivery(
    id: string,
    owner: string,
    patch: WebhookDeliveryPatch,
  ): Promise<WebhookDeliveryRecord | undefined>;

  // files (the Files API: their metadata; the contents are on disk)
  insertFile(f: FileRecord): Promise<void>;
  getFile(id: string): Promise<FileRecord | undefined>;
  deleteFile(id: string): Promise<boolean>;
  listFiles(opts: FileListOptions): Promise<Page<FileRecord>>;
  /** Files whose expires_at <= `at`, soonest first, at most `limit` (the purge). */
  listExpiredFiles(at: number, limit: number): Promise<FileRecord[]>;
}

/**
 * Whether each operation only reads or also writes, decided where the operation is declared: a new operation
 * without its entry here does not compile. The embedded store queues writes behind an open transaction and lets
 * reads through (store/sqlite/index.ts): a read declared a write would wait for nothing, a write declared a read
 * could land in someone else's transaction.
 */
export const QUERY_ACCESS: { readonly [K in keyof Queries]: "read" | "write" } = {
  insertKey: "write",
  getKey: "read",
  listKeys: "read",
  revokeKey: "write",
  hasKeys: "read",
  inactiveKeys: "read",
  insertAgent: "write",
  getAgent: "read",
  updateAgent: "write",
  deleteAgent: "write",
  listAgents: "read",
  insertSession: "write",
  getSession: "read",
  updateSession: "write",
  claimSession: "write",
  startTurn: "write",
  releaseSession: "write",
  deleteSession: "write",
  listSessions: "read",
  countSessions: "read",
  listIdleSessionsBefore: "read",
  listBusySessions: "read",
  insertTurn: "write",
  getTurn: "read",
  updateTurn: "write",
  listTurns: "read",
  listItems: "read",
  closeOpenItems: "write",
  endTurn: "write",
  copyHistory: "write",
  appendEvents: "write",
  readEvents: "read",
  lastEventSeq: "read",
  firstEventSeqOfTurn: "read",
  getGoal: "read",
  putGoal: "write",
  deleteGoal: "write",
  listGoals: "read",
  insertEnvironment: "write",
  getEnvironment: "read",
  updateEnvironment: "write",
  attachEnvironment: "write",
  listEnvironments: "read",
  listPendingEnvironments: "read",
  insertEnvironmentTemplate: "write",
  getEnvironmentTemplate: "read",
  updateEnvironmentTemplate: "write",
  deleteEnvironmentTemplate: "write",
  listEnvironmentTemplates: "read",
  insertVault: "write",
  getVault: "read",
  updateVault: "write",
  deleteVault: "write",
  listVaults: "read",
  insertVaultCredential: "write",
  getVaultCredential: "read",
  updateVaultCredential: "write",
  deleteVaultCredential: "write",
  listVaultCredentials: "read",
  credentialsOfVaults: "read",
  listSealed: "read",
  replaceSealed: "write",
  getIdempotency: "read",
  putIdempotency: "write",
  expireIdempotency: "write",
  insertAutomation: "write",
  getAutomation: "read",
  lockAutomation: "read",
  updateAutomation: "write",
  deleteAutomation: "write",
  listAutomations: "read",
  lockDueAutomations: "read",
  insertInvocation: "write",
  getInvocation: "read",
  listInvocations: "read",
  hasQueuedInvocation: "read",
  claimInvocations: "write",
  updateClaimedInvocation: "write",
  findInvocationSession: "read",
  insertWebhookEndpoint: "write",
  getWebhookEndpoint: "read",
  updateWebhookEndpoint: "write",
  deleteWebhookEndpoint: "write",
  listWebhookEndpoints: "read",
  getWebhookDelivery: "read",
  listWebhookDeliveries: "read",
  claimWebhookDeliveries: "write",
  updateClaimedWebhookDelivery: "write",
  insertFile: "write",
  getFile: "read",
  deleteFile: "write",
  listFiles: "read",
  listExpiredFiles: "read",
};

export interface Store extends Queries {
  /** Which implementation ("sqlite", "postgres"). */
  readonly kind: string;
  /** Runs fn in one transaction: all its writes or none. */
  transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T>;
  /**
   * A number that changes whenever another process has committed to the store since the last call, so that state
   * written from outside (e.g. `keys revoke` from the CLI) can be noticed cheaply; null when the store cannot tell
   * (PostgreSQL: writers tell the instances with NOTIFY instead).
   */
  changeCounter(): Promise<number | null>;
  close(): Promise<void>;
}
