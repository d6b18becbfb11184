/**
 * Several instances on one PostgreSQL database.
 * - Liveness: each instance heartbeats its `instances` row every second (database time). One that cannot for
 *   `fenceAfterMs` fences itself (stops its engines, runs no turns: its turns are about to be taken over); one
 *   whose heartbeat is older than `deadAfterSeconds` is dead, and any instance takes over its running turns (a
 *   new lease epoch each: the dead owner's late writes are refused).
 * - Wake-ups: after writing a session's log an instance NOTIFYs `cas_log` ("<session> <seq>"); the others wake
 *   that session's subscribers, which read the events from the database by seq. Notifications are coalesced per
 *   event-loop turn, sent outside the append transaction (a NOTIFY in it would serialise every commit).
 * - Control: an operation on a running turn goes to its owner as a `control_requests` row plus a NOTIFY on
 *   `cas_ctl`; the owner runs it and writes the result back.
 * - Revoked keys: the store's revokeKey NOTIFYs `cas_keys` (from any process, the CLI included); every instance
 *   ends the streams the key opened.
 * One dedicated connection LISTENs (never a pooled one); when it drops, it reconnects and every subscriber re-reads
 * and the keys of open streams are read again (notifications sent meanwhile are lost).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Logger } from "pino";
import { KEYS_CHANNEL } from "../../store/postgres/keys.js";
import { SESSIONS } from "../../store/tables/sessions.js";
import type { SessionRecord } from "../../store/types.js";
import type { Cluster, ClusterStats, ControlOp, ControlResult } from "./types.js";

export interface PgClusterOptions {
  pool: pg.Pool;
  /** For the dedicated LISTEN connection. */
  connectionString: string;
  logger: Logger;
  heartbeatMs?: number;
  fenceAfterMs?: number;
  deadAfterSeconds?: number;
  /** How long a control request waits for the owner's answer. */
  controlTimeoutMs?: number;
}

type StartOptions = Parameters<Cluster["start"]>[0];

const monotonic = () => performance.now();

export class PgCluster implements Cluster {
  readonly instanceId = `inst_${randomBytes(8).toString("hex")}`;
  private healthyFlag = true;
  private lastBeat = monotonic();
  private listener: pg.Client | null = null;
  private handlers: StartOptions | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly waiters = new Map<string, () => void>();
  private pendingWakes = new Map<string, number>();
  private wakeScheduled = false;
  private stopped = false;
  private live = 1;
  private takeovers = 0;
  private readonly heartbeatMs: number;
  private readonly fenceAfterMs: number;
  private readonly deadAfterSeconds: number;
  private readonly controlTimeoutMs: number;

  constructor(private readonly opts: PgClusterOptions) {
    this.heartbeatMs = opts.heartbeatMs ?? 1000;
    this.fenceAfterMs = opts.fenceAfterMs ?? 4000;
    this.deadAfterSeconds = opts.deadAfterSeconds ?? 7;
    this.controlTimeoutMs = opts.controlTimeoutMs ?? 15_000;
  }

  get healthy(): boolean {
    return this.healthyFlag;
  }

  async start(handlers: StartOptions): Promise<void> {
    this.handlers = handlers;
    await this.opts.pool.query("INSERT INTO instances (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [
      this.instanceId,
    ]);
    await this.listen();
    this.timers.push(setInterval(() => void this.heartbeat(), this.heartbeatMs));
    this.timers.push(setInterval(() => void this.cleanup(), 60_000));
    for (const t of this.timers) t.unref();
  }

  published(sessionId: string, seq: number): void {
    if (this.stopped) return;
    this.pendingWakes.set(sessionId, Math.max(seq, this.pendingWakes.get(sessionId) ?? 0));
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      const payloads = [...this.pendingWakes].map(([s, q]) => `${s} ${q}`);
      this.pendingWakes = new Map();
      this.opts.pool
        .query("SELECT pg_notify('cas_log', p) FROM unnest($1::text[]) AS p", [payloads])
        .catch((err: unknown) => this.opts.logger.warn({ err: String(err) }, "cluster: wake-up not sent"));
    });
  }

  async send(target: string, op: ControlOp): Promise<ControlResult | null> {
    const { pool } = this.opts;
    if (!(await this.isAlive(target))) return null;
    const res = await pool.query<{ id: string }>(
      "INSERT INTO control_requests (target, op) VALUES ($1, $2::jsonb) RETURNING id::text AS id",
      [target, JSON.stringify(op)],
    );
    const id = res.rows[0]!.id;
    try {
      const answered = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.controlTimeoutMs);
        timer.unref();
        this.waiters.set(id, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      await pool.query("SELECT pg_notify('cas_ctl', $1)", [`req ${id} ${target}`]);
      await answered;
      const done = await pool.query<{ result: ControlResult | null }>(
        "SELECT result FROM control_requests WHERE id = $1",
        [id],
      );
      return (
        done.rows[0]?.result ?? {
          ok: false,
          error: {
            kind: "unavailable",
            message: "The instance running this turn did not answer in time; try again",
            param: null,
            code: "service_unavailable",
          },
        }
      );
    } finally {
      this.waiters.delete(id);
      await pool.query("DELETE FROM control_requests WHERE id = $1", [id]).catch(() => undefined);
    }
  }

  async claimOrphans(): Promise<SessionRecord[]> {
    if (!this.healthyFlag || this.stopped) return [];
    const res = await this.opts.pool.query<SessionRecord>(
      `UPDATE sessions s SET lease_epoch = s.lease_epoch + 1, owner_instance = $1
       WHERE s.id IN (
         SELECT o.id FROM sessions o LEFT JOIN instances i ON i.id = o.owner_instance
         WHERE o.active_turn_id IS NOT NULL
           AND (i.id IS NULL OR i.heartbeat_at < now() - make_interval(secs => $2))
         FOR UPDATE OF o SKIP LOCKED
       )
       RETURNING ${SESSIONS.list}`,
      [this.instanceId, this.deadAfterSeconds],
    );
    this.takeovers += res.rows.length;
    return res.rows;
  }

  stats(): ClusterStats {
    return {
      kind: "postgres",
      instance: this.instanceId,
      healthy: this.healthyFlag,
      live: this.live,
      takeovers: this.takeovers,
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const w of this.waiters.values()) w();
    await this.opts.pool
      .query("DELETE FROM instances WHERE id = $1", [this.instanceId])
      .catch(() => undefined);
    const l = this.listener;
    this.listener = null;
    await l?.end().catch(() => undefined);
  }

  private async isAlive(instance: string): Promise<boolean> {
    const res = await this.opts.pool.query(
      "SELECT 1 FROM instances WHERE id = $1 AND heartbeat_at >= now() - make_interval(secs => $2)",
      [instance, this.deadAfterSeconds],
    );
    return (res.rowCount ?? 0) > 0;
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped) return;
    try {
      const res = await this.opts.pool.query<{ live: number }>(
        `WITH beat AS (
           INSERT INTO instances (id) VALUES ($1)
           ON CONFLICT (id) DO UPDATE SET heartbeat_at = now() RETURNING id
         )
         SELECT count(*)::int AS live FROM instances
         WHERE heartbeat_at >= now() - make_interval(secs => $2) OR id = $1`,
        [this.instanceId, this.deadAfterSeconds],
      );
      this.live = res.rows[0]?.live ?? this.live;
      this.lastBeat = monotonic();
      if (!this.healthyFlag) {
        this.healthyFlag = true;
        this.opts.logger.warn("cluster: the database answers again; this instance runs turns again");
      }
    } catch (err) {
      if (this.healthyFlag && monotonic() - this.lastBeat > this.fenceAfterMs) {
        this.healthyFlag = false;
        this.opts.logger.error(
          { err: String(err) },
          "cluster: no heartbeat for too long: fencing this instance (stopping its engines)",
        );
        this.handlers?.fenced();
      }
    }
  }

  private async cleanup(): Promise<void> {
    const { pool } = this.opts;
    await pool
      .query("DELETE FROM instances WHERE heartbeat_at < now() - interval '1 hour'")
      .then(() => pool.query("DELETE FROM control_requests WHERE created_at < now() - interval '10 minutes'"))
      .catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.connectionString });
    client.on("notification", (n) => this.onNotification(n.channel, n.payload ?? ""));
    client.on("error", (err) => {
      this.opts.logger.warn({ err: String(err) }, "cluster: LISTEN connection lost; reconnecting");
      void this.reconnect(client);
    });
    await client.connect();
    await client.query("LISTEN cas_log");
    await client.query("LISTEN cas_ctl");
    await client.query(`LISTEN ${KEYS_CHANNEL}`);
    this.listener = client;
  }

  private async reconnect(old: pg.Client): Promise<void> {
    if (this.listener !== old || this.stopped) return;
    this.listener = null;
    await old.end().catch(() => undefined);
    for (let delay = 100; !this.stopped; delay = Math.min(delay * 2, 2000)) {
      try {
        await this.listen();
        // Wake-ups sent while disconnected are lost: every subscriber reads again.
        this.handlers?.wake("*", Number.MAX_SAFE_INTEGER);
        this.handlers?.revoked?.(null);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, delay).unref());
      }
    }
  }

  private onNotification(channel: string, payload: string): void {
    const parts = payload.split(" ");
    if (channel === "cas_log") {
      const seq = Number(parts[1]);
      if (parts[0] && Number.isFinite(seq)) this.handlers?.wake(parts[0], seq);
      return;
    }
    if (channel === KEYS_CHANNEL) {
      if (payload) this.handlers?.revoked?.(payload);
      return;
    }
    if (channel !== "cas_ctl") return;
    if (parts[0] === "res" && parts[1]) this.waiters.get(parts[1])?.();
    else if (parts[0] === "req" && parts[1] && parts[2] === this.instanceId) void this.answer(parts[1]);
  }

  /** Runs a control request addressed to this instance and writes its result back. */
  private async answer(id: string): Promise<void> {
    const { pool, logger } = this.opts;
    try {
      const res = await pool.query<{ op: ControlOp }>(
        "SELECT op FROM control_requests WHERE id = $1 AND target = $2 AND result IS NULL",
        [id, this.instanceId],
      );
      const op = res.rows[0]?.op;
      if (!op || !this.handlers) return;
      const result = await this.handlers.handle(op);
      await pool.query("UPDATE control_requests SET result = $2::jsonb WHERE id = $1", [
        id,
        JSON.stringify(result),
      ]);
      await pool.query("SELECT pg_notify('cas_ctl', $1)", [`res ${id}`]);
    } catch (err) {
      logger.error({ err: String(err), request: id }, "cluster: control request failed");
    }
  }
}
