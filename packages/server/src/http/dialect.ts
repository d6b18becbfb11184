import type { FastifyRequest } from "fastify";
import type { Dialect } from "../kernel/request-context.js";

export type { Dialect };

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * The dialect a route always answers in, whatever the request's header: the official Files API, whose SDK
     * methods send no `OpenAI-Beta` header.
     */
    dialect?: Dialect;
  }
}

/**
 * Resources of the official API only, whatever the header says: the SDK's webhook and file methods send none. Every
 * answer on them is official, the refusals made before any route (auth, content type, origin, a malformed URL)
 * included.
 */
const OFFICIAL_ONLY = /^\/v1\/(?:webhook_(?:endpoints|event_types)|files)(?:[/?#]|$)/;

/** A request; or a raw one (no route options yet) when the router asks for its dialect. */
type RequestLike = Pick<FastifyRequest, "headers"> & {
  url?: string | undefined;
  routeOptions?: { config?: { dialect?: Dialect } };
};

export function dialectOf(req: RequestLike): Dialect {
  const fixed = req.routeOptions?.config?.dialect;
  if (fixed) return fixed;
  if (OFFICIAL_ONLY.test(req.url ?? "")) return "openai";
  const beta = req.headers["openai-beta"];
  const values = Array.isArray(beta) ? beta : beta ? [beta] : [];
  return values.some((v) => /(^|[,\s])agents=v1\b/.test(v)) ? "openai" : "template";
}

/**
 * The route constraint that picks a dialect's routes: each dialect plugin registers its routes with
 * `constraints: {dialect}`; routes without the constraint (health, ops) serve both.
 */
export const dialectConstraint = {
  name: "dialect",
  storage<T>() {
    const handlers = new Map<string, T>();
    return {
      get: (value: string): T | null => handlers.get(value) ?? null,
      set: (value: string, store: T) => {
        handlers.set(value, store);
      },
    };
  },
  deriveConstraint: (req: { headers: FastifyRequest["headers"]; url?: string | undefined }) => dialectOf(req),
  mustMatchWhenDerived: false,
};
