/**
 * `Idempotency-Key`: the first request with a key is applied and its answer stored; a repeat with the same body
 * gets the same answer without being applied again (a repeat that arrives while the first is still being applied
 * waits for it and gets its answer); a repeat with a different body is a 409 (no retry). A request that fails is
 * not recorded, so a retry with the same key applies it again. Keys are forgotten after 24 hours, as the official
 * API documents.
 */
import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Clock } from "../kernel/clock.js";
import { conflict } from "../kernel/errors.js";
import type { Store } from "../store/types.js";

export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

interface Answer {
  status: number;
  body: unknown;
}

interface InFlight {
  hash: string;
  answer: Promise<Answer>;
}

/** Requests being applied right now, per store (one service), by scope + key. */
const inFlight = new WeakMap<IdempotencyRecords["store"], Map<string, InFlight>>();

const mismatch = (key: string) =>
  conflict(
    `Idempotency-Key "${key}" was already used with a different request body`,
    "idempotency_key_reused",
  );

/** `fingerprint`: what identifies the request (default its JSON body; an upload gives its contents' hash). */
/** Where answers to keyed requests are kept, and the clock that dates them. */
export interface IdempotencyRecords {
  store: Pick<Store, "getIdempotency" | "putIdempotency">;
  clock: Clock;
}

export async function idempotent(
  { store, clock }: IdempotencyRecords,
  scope: string,
  req: FastifyRequest,
  reply: FastifyReply,
  apply: () => Promise<Answer>,
  fingerprint: unknown = req.body ?? null,
): Promise<unknown> {
  const header = req.headers["idempotency-key"];
  const key = typeof header === "string" && header.length > 0 ? header : null;
  if (!key) {
    const r = await apply();
    return reply.code(r.status).send(r.body);
  }
  const hash = createHash("sha256").update(canonical(fingerprint)).digest("hex");
  let running = inFlight.get(store);
  if (!running) {
    running = new Map();
    inFlight.set(store, running);
  }
  const id = `${scope}\u0000${key}`;
  const pending = running.get(id);
  if (pending) {
    if (pending.hash !== hash) throw mismatch(key);
    const r = await pending.answer;
    return reply.code(r.status).header("idempotent-replayed", "true").send(r.body);
  }
  // Registered before any await, so a concurrent duplicate cannot apply the request twice.
  let release!: (a: Promise<Answer>) => void;
  let settle!: (err: unknown) => void;
  const answer = new Promise<Answer>((resolve, reject) => {
    release = resolve;
    settle = reject;
  });
  answer.catch(() => undefined); // a failure is reported to this request; waiters see it through their await
  running.set(id, { hash, answer });
  try {
    const seen = await store.getIdempotency(scope, key);
    if (seen && seen.created_at >= clock.now() - IDEMPOTENCY_TTL_SECONDS) {
      if (seen.body_hash !== hash) throw mismatch(key);
      const replay = { status: seen.status, body: seen.response ?? undefined };
      release(Promise.resolve(replay));
      return reply.code(replay.status).header("idempotent-replayed", "true").send(replay.body);
    }
    const applied = apply();
    release(applied);
    const r = await applied;
    await store.putIdempotency({
      scope,
      key,
      body_hash: hash,
      status: r.status,
      response: r.body ?? null,
      created_at: clock.now(),
    });
    return reply.code(r.status).send(r.body);
  } catch (err) {
    settle(err); // no effect once released
    throw err;
  } finally {
    running.delete(id);
  }
}
