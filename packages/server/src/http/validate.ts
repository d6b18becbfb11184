import { z } from "zod";
import { badRequest } from "../domain/errors.js";

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

/** Parses a body with a zod schema; the first issue becomes a clear 400 naming the field. */
export function parse<T extends z.ZodType>(schema: T, value: unknown, what = "body"): z.infer<T> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  const issue = explain(r.error.issues[0]!);
  const path = issue.path.map(String).join(".");
  throw badRequest(
    path ? `Invalid '${path}': ${issue.message}` : `Invalid ${what}: ${issue.message}`,
    path || null,
  );
}

export const Metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, {
    message: "at most 16 metadata pairs",
  });

/** `?limit=&after=&order=` of list endpoints. */
export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  after: z.string().min(1).optional(),
  order: z.enum(["asc", "desc"]).optional(),
});
