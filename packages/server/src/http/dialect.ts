import type { FastifyRequest } from "fastify";

/** Which wire format a request speaks: the official SDKs always send `OpenAI-Beta: agents=v1`. */
export type Dialect = "openai" | "template";

export function dialectOf(req: FastifyRequest): Dialect {
  const beta = req.headers["openai-beta"];
  const values = Array.isArray(beta) ? beta : beta ? [beta] : [];
  return values.some((v) => /(^|[,\s])agents=v1\b/.test(v)) ? "openai" : "template";
}
