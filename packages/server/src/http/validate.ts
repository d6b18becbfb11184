import { z } from "zod";
import { badRequest } from "../domain/errors.js";

/** Parses a body with a zod schema; the first issue becomes a clear 400 naming the field. */
export function parse<T extends z.ZodType>(schema: T, value: unknown, what = "body"): z.infer<T> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = issue.path.join(".");
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
