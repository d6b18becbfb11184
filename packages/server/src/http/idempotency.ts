import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { conflict } from "../domain/errors.js";
import type { Store } from "../store/types.js";

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * `Idempotency-Key`: the first request with a key is applied and its answer stored; a repeat with the same body
 * gets the same answer without being applied again; a repeat with a different body is a 409 (no retry).
 */
export async function idempotent(
  store: Store,
  scope: string,
  req: FastifyRequest,
  reply: FastifyReply,
  apply: () => Promise<{ status: number; body: unknown }>,
): Promise<unknown> {
  const header = req.headers["idempotency-key"];
  const key = typeof header === "string" && header.length > 0 ? header : null;
  if (!key) {
    const r = await apply();
    return reply.code(r.status).send(r.body);
  }
  const hash = createHash("sha256")
    .update(canonical(req.body ?? null))
    .digest("hex");
  const seen = store.getIdempotency(scope, key);
  if (seen) {
    if (seen.body_hash !== hash) {
      throw conflict(
        `Idempotency-Key "${key}" was already used with a different request body`,
        "idempotency_key_reused",
      );
    }
    return reply
      .code(seen.status)
      .header("idempotent-replayed", "true")
      .send(seen.response ?? undefined);
  }
  // Reserve the key before any await so a concurrent duplicate cannot apply the request twice.
  store.putIdempotency({
    scope,
    key,
    body_hash: hash,
    status: 202,
    response: null,
    created_at: Date.now() / 1000,
  });
  const r = await apply();
  store.putIdempotency({
    scope,
    key,
    body_hash: hash,
    status: r.status,
    response: r.body ?? null,
    created_at: Date.now() / 1000,
  });
  return reply.code(r.status).send(r.body);
}
