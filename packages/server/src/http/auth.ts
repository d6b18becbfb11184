/**
 * Who is calling: every request gets a scope (its project). With API keys, a request must carry an active key
 * (`Authorization: Bearer cas_…` or `X-Access-Token`) and sees its key's project only; the operator's `--token`
 * keeps working as an admin of the default project. Without keys: the single `--token` if one is configured,
 * else nobody is asked (loopback binds only; see config). `/health` (nothing per project) and the console's static
 * files are always open.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { KeyService } from "../domain/keys.js";
import { unauthorized } from "../kernel/errors.js";
import { DEFAULT_PROJECT, type Scope } from "../model/scope.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The caller's project (set by the auth hook on every request but /health). */
    scope: Scope;
    /** The API key that authenticated the request, if one did (rate limits are per key). */
    keyId: string | null;
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The auth scheme is case-insensitive (RFC 9110 §11.1). */
const BEARER = /^bearer[ \t]+(.+)$/i;

/** Every credential the request offers: `Authorization: Bearer …` and `X-Access-Token: …`. */
function offered(req: FastifyRequest): string[] {
  const out: string[] = [];
  const header = req.headers.authorization;
  const bearer = typeof header === "string" ? BEARER.exec(header.trim())?.[1]?.trim() : undefined;
  if (bearer) out.push(bearer);
  const access = req.headers["x-access-token"];
  if (typeof access === "string" && access) out.push(access);
  return out;
}

const OPERATOR: Scope = { projectId: DEFAULT_PROJECT, admin: true };

/**
 * Open to everyone: liveness, the console's static files (it asks for the key itself), and the API's description
 * (the OpenAPI documents and their docs page: nothing per project).
 */
export function isOpenPath(url: string): boolean {
  const path = url.split("?", 1)[0]!;
  return (
    path === "/health" ||
    path === "/console" ||
    path.startsWith("/console/") ||
    path === "/openapi.json" ||
    path === "/docs" ||
    path.startsWith("/docs/")
  );
}

/** What authentication needs: the operator's `--token` (or null) and the project keys. */
export interface AuthSources {
  token: string | null;
  keys: Pick<KeyService, "authenticate" | "enabled">;
}

export function installAuth(app: FastifyInstance, { token, keys }: AuthSources): void {
  app.decorateRequest("scope", null as unknown as Scope);
  app.decorateRequest("keyId", null);
  app.addHook("onRequest", async (req) => {
    if (isOpenPath(req.url)) return;
    const credentials = offered(req);
    // Compare the operator token against every candidate (no short-circuit on the first match).
    let operator = false;
    if (token) for (const given of credentials) operator = same(given, token) || operator;
    if (operator) {
      req.scope = OPERATOR;
      return;
    }
    for (const given of credentials) {
      const scope = await keys.authenticate(given);
      if (scope) {
        req.scope = { projectId: scope.projectId, admin: scope.admin };
        req.keyId = scope.keyId;
        return;
      }
    }
    if (token || (await keys.enabled())) throw unauthorized();
    req.scope = OPERATOR;
  });
}
