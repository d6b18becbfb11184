/**
 * Request validation: zod schemas on the routes (params, query, body), checked by one validator compiler whose
 * errors are the API's own 400s, naming the field.
 */
import type { FastifySchemaCompiler } from "fastify";
import { z } from "zod";
import { badRequest } from "../kernel/errors.js";
import { MAX_UNIX_SECONDS, MAX_UNIX_SECONDS_ISO } from "../kernel/unix-seconds.js";

type Issue = z.core.$ZodIssue;

/**
 * The issue worth reporting. A union's own issue only says "Invalid input": report the branch that got furthest
 * (`agent: {model: 5}` → `agent.model: expected string`), or, when every branch failed on the type of the value
 * itself, the accepted types (`agent: 5` → `expected string or object, received number`).
 */
function explain(issue: Issue): { path: PropertyKey[]; message: string } {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  const firsts = issue.errors.flatMap((branch) => (branch[0] ? [branch[0]] : []));
  const deepest = firsts.reduce<Issue | undefined>(
    (best, i) => (!best || i.path.length > best.path.length ? i : best),
    undefined,
  );
  if (deepest && deepest.path.length > 0) {
    const inner = explain(deepest);
    return { path: [...issue.path, ...inner.path], message: inner.message };
  }
  const expected = firsts.flatMap((i) => (i.code === "invalid_type" ? [i.expected] : []));
  const received = firsts.map((i) => /received (\w+)/.exec(i.message)?.[1]).find(Boolean);
  if (expected.length === firsts.length && received) {
    return {
      path: issue.path,
      message: `Invalid input: expected ${[...new Set(expected)].join(" or ")}, received ${received}`,
    };
  }
  return deepest ? { path: issue.path, message: deepest.message } : issue;
}

/** The first issue of a failed parse as a 400 naming the field. */
export function invalid(error: z.ZodError, what: string) {
  const issue = explain(error.issues[0]!);
  const path = issue.path.map(String).join(".");
  return badRequest(
    path ? `Invalid '${path}': ${issue.message}` : `Invalid ${what}: ${issue.message}`,
    path || null,
  );
}

/** Parses a value with a zod schema outside a route schema (e.g. one event of a list). */
export function parse<T extends z.ZodType>(schema: T, value: unknown, what = "body"): z.infer<T> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw invalid(r.error, what);
}

const PART_NAMES: Record<string, string> = {
  body: "body",
  querystring: "query",
  params: "path",
  headers: "headers",
};

/** Fastify's validator compiler for zod route schemas. */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const r = schema.safeParse(data ?? {});
    if (r.success) return { value: r.data };
    return { error: invalid(r.error, PART_NAMES[httpPart ?? "body"] ?? "body") };
  };

export const Metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, {
    message: "at most 16 metadata pairs",
  });

/** A time a client gives, in Unix seconds: whole seconds, up to the end of year 9999 (kernel/unix-seconds.ts). */
const UNIX_SECONDS = {
  error: `expected a Unix timestamp in whole seconds, from 0 to ${MAX_UNIX_SECONDS} (${MAX_UNIX_SECONDS_ISO})`,
};
export const UnixSeconds = z
  .number()
  .int(UNIX_SECONDS)
  .min(0, UNIX_SECONDS)
  .max(MAX_UNIX_SECONDS, UNIX_SECONDS);

/** `?limit=&after=&order=` of list endpoints. */
export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  after: z.string().min(1).optional(),
  order: z.enum(["asc", "desc"]).optional(),
});

export const SessionParams = z.object({ session_id: z.string() });
export const AgentParams = z.object({ agent_id: z.string() });
export const TurnParams = z.object({ session_id: z.string(), turn_id: z.string() });
export const ArtifactParams = z.object({ session_id: z.string(), artifact_id: z.string() });
