import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { unauthorized } from "../domain/errors.js";

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The auth scheme is case-insensitive (RFC 9110 §11.1). */
const BEARER = /^bearer[ \t]+(.+)$/i;

/** Every token the request offers: `Authorization: Bearer …` and `X-Access-Token: …`. */
function offeredTokens(req: FastifyRequest): string[] {
  const offered: string[] = [];
  const header = req.headers.authorization;
  const bearer = typeof header === "string" ? BEARER.exec(header.trim())?.[1]?.trim() : undefined;
  if (bearer) offered.push(bearer);
  const access = req.headers["x-access-token"];
  if (typeof access === "string" && access) offered.push(access);
  return offered;
}

/**
 * When a token is configured, every route but /health needs it (Bearer or X-Access-Token). Either header may
 * carry it: clients such as the openai SDK always send their own `Authorization: Bearer <api key>`, so a server
 * token given as `X-Access-Token` next to it must still be accepted.
 */
export function installAuth(app: FastifyInstance, token: string | null): void {
  if (!token) return;
  app.addHook("onRequest", async (req) => {
    if (req.url === "/health" || req.url.startsWith("/health?")) return;
    // Compare every candidate (no short-circuit on the first match).
    let ok = false;
    for (const given of offeredTokens(req)) ok = same(given, token) || ok;
    if (!ok) throw unauthorized();
  });
}
