/**
 * What the OpenAPI documents say about each operation beyond its request schemas (which come from the routes' zod
 * schemas): summary, tag, operation id and responses, per dialect. A route missing here is still documented (with
 * a derived id and a generic response), so the documents never leave a route out.
 */
import type { Dialect } from "../dialect.js";
import { OFFICIAL } from "./openapi-operations/official.js";
import type { JsonSchema, Operation } from "./openapi-operations/operation.js";
import { REPOSITORIES, SHARED } from "./openapi-operations/shared.js";
import { TEMPLATE } from "./openapi-operations/template.js";

export type { Operation } from "./openapi-operations/operation.js";

/** `/v1/agents/:agent_id` → `/v1/agents/{agent_id}` (OpenAPI path templates). */
export const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function derived(method: string, path: string): Operation {
  const words = path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1));
  return {
    summary: `${method} ${path}`,
    tag: "Other",
    operationId: method.toLowerCase() + words.join(""),
    returns: "Success",
  };
}

export function operationOf(dialect: Dialect, method: string, url: string, shared: boolean): Operation {
  const key = `${method} ${openapiPath(url)}`;
  return (
    (shared ? SHARED[key] : ((dialect === "openai" ? OFFICIAL : TEMPLATE)[key] ?? REPOSITORIES[key])) ??
    derived(method, url)
  );
}

/** The official error body. */
export const OFFICIAL_ERROR: JsonSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "param", "code"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: ["string", "null"] },
      },
    },
  },
};

/** The template's error body. */
export const TEMPLATE_ERROR: JsonSchema = {
  type: "object",
  required: ["error", "type"],
  properties: {
    error: { type: "string", description: "What went wrong" },
    type: { type: "string", description: "The error class, e.g. NotFoundError, ValueError, AuthError" },
  },
};
