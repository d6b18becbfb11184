import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import { notImplemented } from "../domain/errors.js";
import { type Dialect, dialectOf } from "./dialect.js";

// biome-ignore lint/suspicious/noExplicitAny: route params/bodies are validated inside each handler
export type Handler = (req: FastifyRequest<any>, reply: FastifyReply) => Promise<unknown>;
export type Handlers = Partial<Record<RouteName, Handler>>;

/** Every public route once; each request is served by the handler of its dialect. */
export const ROUTES = {
  createAgent: ["POST", "/v1/agents"],
  listAgents: ["GET", "/v1/agents"],
  getAgent: ["GET", "/v1/agents/:agent_id"],
  updateAgent: ["POST", "/v1/agents/:agent_id"],
  deleteAgent: ["DELETE", "/v1/agents/:agent_id"],
  createSession: ["POST", "/v1/agents/sessions"],
  listSessions: ["GET", "/v1/agents/sessions"],
  getSession: ["GET", "/v1/agents/sessions/:session_id"],
  updateSession: ["POST", "/v1/agents/sessions/:session_id"],
  deleteSession: ["DELETE", "/v1/agents/sessions/:session_id"],
  postEvents: ["POST", "/v1/agents/sessions/:session_id/events"],
  streamEvents: ["GET", "/v1/agents/sessions/:session_id/events"],
  listItems: ["GET", "/v1/agents/sessions/:session_id/items"],
  listTurns: ["GET", "/v1/agents/sessions/:session_id/turns"],
  getTurn: ["GET", "/v1/agents/sessions/:session_id/turns/:turn_id"],
  listTurnItems: ["GET", "/v1/agents/sessions/:session_id/turns/:turn_id/items"],
  listArtifacts: ["GET", "/v1/agents/sessions/:session_id/artifacts"],
  getArtifact: ["GET", "/v1/agents/sessions/:session_id/artifacts/:artifact_id"],
  getArtifactContent: ["GET", "/v1/agents/sessions/:session_id/artifacts/:artifact_id/content"],
  deleteArtifact: ["DELETE", "/v1/agents/sessions/:session_id/artifacts/:artifact_id"],
  getGoal: ["GET", "/v1/agents/sessions/:session_id/goal"],
  setGoal: ["POST", "/v1/agents/sessions/:session_id/goal"],
  clearGoal: ["DELETE", "/v1/agents/sessions/:session_id/goal"],
  uploadFile: ["POST", "/files/upload-stream"],
} as const satisfies Record<string, readonly [HTTPMethods, string]>;
export type RouteName = keyof typeof ROUTES;

/** Official endpoints this server does not provide yet: a clear error in the right shape, never a 404 page. */
const UNIMPLEMENTED = [
  "/v1/agents/environments",
  "/v1/agents/environments/*",
  "/v1/agents/automations",
  "/v1/agents/automations/*",
  "/v1/files",
  "/v1/files/*",
  "/v1/vaults",
  "/v1/vaults/*",
  "/v1/agents/sessions/:session_id/subagents",
  "/v1/agents/sessions/:session_id/subagents/*",
  "/v1/agents/sessions/:session_id/traces",
];

export function registerRoutes(app: FastifyInstance, handlers: Record<Dialect, Handlers>): void {
  for (const [name, [method, url]] of Object.entries(ROUTES) as Array<
    [RouteName, readonly [HTTPMethods, string]]
  >) {
    const own = handlers.template[name];
    const official = handlers.openai[name];
    app.route({
      method,
      url,
      handler: (req, reply) => {
        const handler = dialectOf(req) === "openai" ? (official ?? own) : (own ?? official);
        if (!handler) throw notImplemented(`${method} ${url} is not implemented by this server`);
        return handler(req, reply);
      },
    });
  }
  for (const url of UNIMPLEMENTED) {
    app.route({
      method: ["GET", "POST", "DELETE"],
      url,
      handler: async (req) => {
        throw notImplemented(`${req.method} ${req.url.split("?")[0]} is not implemented by this server yet`);
      },
    });
  }
}
