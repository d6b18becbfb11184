import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { unauthorized } from "../domain/errors.js";

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** When a token is configured, every route but /health needs it (Bearer or X-Access-Token). */
export function installAuth(app: FastifyInstance, token: string | null): void {
  if (!token) return;
  app.addHook("onRequest", async (req) => {
    if (req.url === "/health" || req.url.startsWith("/health?")) return;
    const header = req.headers.authorization;
    const bearer = typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7).trim() : null;
    const access = req.headers["x-access-token"];
    const given = bearer ?? (typeof access === "string" ? access : null);
    if (!given || !same(given, token)) throw unauthorized();
  });
}
