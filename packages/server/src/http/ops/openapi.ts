/**
 * OpenAPI 3.1 documents generated from the routes' zod schemas (@fastify/swagger with fastify-type-provider-zod's
 * JSON Schema transform), and the docs page (Swagger UI from @fastify/swagger-ui, served from this server's files).
 *
 * One document per wire dialect. Both dialects share every path and method and are told apart by the
 * `OpenAI-Beta: agents=v1` header, but OpenAPI allows one operation per path and method: a merged document would
 * have to turn every body and response into a union, which client generators make unusable. So:
 * - `GET /openapi.json` (or `?dialect=official`): the official OpenAI Agents API dialect; every operation declares
 *   the required `OpenAI-Beta: agents=v1` header, so Swagger UI and generated clients send it;
 * - `GET /openapi.json?dialect=template`: the original template's dialect (no header);
 * - `GET /docs`: Swagger UI with both, picked from its top bar.
 * Routes served to both dialects (health, metrics, traces) appear in both.
 */
import fastifySwagger, { type SwaggerTransform } from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifySchema } from "fastify";
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";
import type { App } from "../app-types.js";
import type { Dialect } from "../dialect.js";
import { OFFICIAL_ERROR, type Operation, operationOf, TEMPLATE_ERROR } from "./openapi-operations.js";

const VERSION = "0.1.0";

/** The Fastify decorator that renders each dialect's document. */
const DECORATOR: Record<Dialect, string> = { openai: "swagger", template: "swaggerTemplate" };

const SWAGGER_UI_STYLE_HASH = "sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w=";

/** Not part of the API: the console, the docs themselves. */
const HIDDEN = /^\/(console|docs|openapi)(\/|\.|$)/;

/**
 * The docs page runs only its own scripts (Swagger UI's files and its initializer, all served here), talks only to
 * this origin, and cannot be framed.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; " +
  // The one style element Swagger UI writes itself (pinned with @fastify/swagger-ui; the docs test fails on any
  // CSP violation, so a new version that writes another one is caught).
  `style-src 'self' '${SWAGGER_UI_STYLE_HASH}'; ` +
  "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; " +
  "form-action 'none'";

/** The docs' top-bar logo: the service's name (shown as an image: a data URL). */
const LOGO = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="260" height="40" viewBox="0 0 260 40">' +
    '<text x="0" y="28" font-family="sans-serif" font-size="24" font-weight="bold" fill="#fff">' +
    "codex-agent-api</text></svg>",
);

const DIALECT_TEXT: Record<Dialect, { title: string; description: string }> = {
  openai: {
    title: "codex-agent-api — official dialect (OpenAI Agents API)",
    description:
      "Codex agents behind the OpenAI Agents API (beta). Requests carry `OpenAI-Beta: agents=v1` (the official " +
      "`openai` SDKs always send it); errors are `{error: {message, type, param, code}}`. The same paths " +
      "without that header speak the original template's format: see `/openapi.json?dialect=template`.",
  },
  template: {
    title: "codex-agent-api — template dialect",
    description:
      "The original codex-agent-api format, for requests without `OpenAI-Beta: agents=v1`: `session` objects, " +
      "`{input, stream}` turns that stream SSE from the POST, errors `{error, type}`. The same paths with that " +
      "header speak the official OpenAI Agents API: see `/openapi.json`.",
  },
};

const TAGS = [
  { name: "Agents", description: "Saved agent configurations" },
  { name: "Sessions", description: "An agent at work in its workspace, on one Codex thread" },
  { name: "Events", description: "Input to a session and its event stream" },
  { name: "Items", description: "What the agent produced" },
  { name: "Turns", description: "Units of work started by input (a goal is one turn)" },
  { name: "Goals", description: "An objective the agent keeps working on across continuation turns" },
  { name: "Subagents", description: "Child threads the agent opened with its multi-agent tools" },
  { name: "Artifacts", description: "Files of the session's workspace" },
  {
    name: "Files",
    description: "Uploaded files (the Files API), per project: what `file_id` references name",
  },
  { name: "Traces", description: "Turn traces as OTLP JSON" },
  { name: "Operations", description: "Liveness and metrics" },
];

const OPENAI_BETA = {
  type: "object",
  properties: {
    "OpenAI-Beta": {
      type: "string",
      enum: ["agents=v1"],
      default: "agents=v1",
      description: "Selects the official dialect (the official SDKs always send it)",
    },
  },
  required: ["OpenAI-Beta"],
};

function responses(op: Operation, dialect: Dialect): Record<string, unknown> {
  const status = String(op.status ?? 200);
  const json = { type: "object" };
  const content: Record<string, { schema: Record<string, unknown> }> = {};
  if (op.streams) {
    content["application/json"] = { schema: json };
    content["text/event-stream"] = { schema: { type: "string" } };
  } else if (!op.media || op.media === "application/json") content["application/json"] = { schema: json };
  else
    content[op.media] = {
      schema: { type: "string", ...(op.media.startsWith("text/") ? {} : { format: "binary" }) },
    };
  const error = {
    content: { "application/json": { schema: dialect === "openai" ? OFFICIAL_ERROR : TEMPLATE_ERROR } },
  };
  return {
    [status]:
      status === "202" ? { description: op.returns, type: "null" } : { description: op.returns, content },
    "4XX": { description: "Refused: bad input, authentication, not found, conflict, limits", ...error },
    "5XX": { description: "Server error or not implemented", ...error },
  };
}

function transformFor(dialect: Dialect): SwaggerTransform {
  const zod = createJsonSchemaTransform({ skipList: [] });
  return (doc) => {
    const { route, url } = doc;
    const constrained = (route.constraints as { dialect?: string } | undefined)?.dialect;
    if ((constrained && constrained !== dialect) || HIDDEN.test(url) || doc.schema?.hide) {
      return { schema: { hide: true }, url };
    }
    const method = [route.method].flat()[0]!;
    const op = operationOf(dialect, method, url, !constrained);
    const converted: FastifySchema = (doc.schema ? zod(doc).schema : undefined) ?? {};
    const schema: FastifySchema = {
      ...converted,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      operationId: op.operationId,
      // (A route that always answers in one dialect, whatever the header, documents that dialect's errors.)
      response: responses(op, (route.config as { dialect?: Dialect } | undefined)?.dialect ?? dialect),
      ...(op.form ? { consumes: ["multipart/form-data"], body: op.form } : {}),
      ...(dialect === "openai" && constrained ? { headers: OPENAI_BETA } : {}),
    };
    return { schema, url };
  };
}

function documentOptions(dialect: Dialect) {
  return {
    decorator: DECORATOR[dialect],
    openapi: {
      openapi: "3.1.0",
      info: { version: VERSION, ...DIALECT_TEXT[dialect] },
      tags: TAGS,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: "http" as const,
            scheme: "bearer",
            description: "The service token (--token) or an API key",
          },
          accessToken: { type: "apiKey" as const, in: "header" as const, name: "X-Access-Token" },
        },
      },
      // Authentication is optional (none on a loopback bind without a token).
      security: [{ bearerAuth: [] }, { accessToken: [] }, {}] as Array<Record<string, string[]>>,
    },
    transform: transformFor(dialect),
    transformObject: createJsonSchemaTransformObject({}),
  };
}

const DocQuery = z.object({ dialect: z.enum(["official", "openai", "template"]).optional() });

/**
 * Registers the document generators; must come before the routes they describe (they are collected as they are
 * registered).
 */
export function installOpenApi(app: App): void {
  app.register(fastifySwagger, documentOptions("openai"));
  app.register(fastifySwagger, documentOptions("template"));
}

declare module "fastify" {
  interface FastifyInstance {
    /** The template dialect's document (`swagger()` renders the official one). */
    swaggerTemplate: FastifyInstance["swagger"];
  }
}

/** `GET /openapi.json[?dialect=official|template]` and the docs page at `/docs`. */
export function openapiRoutes(app: App): void {
  app.get("/openapi.json", { schema: { querystring: DocQuery, hide: true } }, async (req) => {
    return req.query.dialect === "template" ? app.swaggerTemplate() : app.swagger();
  });
  app.register(async (docs) => {
    docs.addHook("onSend", async (_req, reply) => {
      reply.header("x-content-type-options", "nosniff");
      reply.header("referrer-policy", "no-referrer");
    });
    await docs.register(fastifySwaggerUi, {
      routePrefix: "/docs",
      staticCSP: DOCS_CSP,
      theme: { title: "codex-agent-api — API reference" },
      logo: { type: "image/svg+xml", content: LOGO },
      uiConfig: {
        // The first is shown first.
        urls: [
          { url: "/openapi.json", name: "Official dialect (OpenAI-Beta: agents=v1)" },
          { url: "/openapi.json?dialect=template", name: "Template dialect" },
        ],
        deepLinking: true,
        displayOperationId: true,
      },
    });
  });
}
