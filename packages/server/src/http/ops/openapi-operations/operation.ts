/**
 * What the OpenAPI documents say about one operation beyond its request schemas: the shape of the entries of the
 * tables next to this file (../openapi-operations.ts looks an operation up in them).
 */
export type JsonSchema = Record<string, unknown>;

export interface Operation {
  summary: string;
  description?: string;
  tag: string;
  operationId: string;
  /** The success status and what it carries. */
  status?: number;
  /** Default `application/json`. */
  media?: "application/json" | "text/event-stream" | "application/octet-stream" | "text/plain";
  /** What a success response is (description; an object id when it is one). */
  returns: string;
  /** A success response that is either JSON or a stream (template requests with `stream: true`). */
  streams?: boolean;
  /** The request is `multipart/form-data` with these fields (a JSON Schema of the form), not JSON. */
  form?: JsonSchema;
}
