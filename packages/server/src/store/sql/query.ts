/**
 * SQL text with its parameters, written once for both backends: the `sql` tag keeps the text and the values apart,
 * and each backend renders the placeholders its own way (SQLite `?`, PostgreSQL `$1…`, with `::jsonb` on JSON
 * values). A value is always a parameter, never text, unless it is a fragment made by `sql`, `raw` or `join`.
 */

/** How a parameter is stored where the backends differ: JSON (`json?`: null is SQL NULL) and booleans. */
export type ParamKind = "json" | "json?" | "bool";

/** A parameter each backend encodes its own way (see {@link ParamKind}). */
export class Typed {
  constructor(
    readonly kind: ParamKind,
    readonly value: unknown,
  ) {}
}

export const jsonParam = (value: unknown): Typed => new Typed("json", value);

/** A statement or a fragment of one: `parts` has one more entry than `values`. */
export class Sql {
  constructor(
    readonly parts: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

/** Trusted text (identifiers, column lists) spliced in as it is. Never pass client input. */
export const raw = (text: string): Sql => new Sql([text], []);

export const EMPTY = raw("");

/** `sql\`SELECT … WHERE id = ${id}\``: values become parameters; nested fragments are spliced in. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  const parts: string[] = [strings[0] ?? ""];
  const params: unknown[] = [];
  values.forEach((v, i) => {
    const next = strings[i + 1] ?? "";
    if (v instanceof Sql) {
      parts[parts.length - 1] += v.parts[0] ?? "";
      for (let k = 0; k < v.values.length; k++) {
        params.push(v.values[k]);
        parts.push(v.parts[k + 1] ?? "");
      }
      parts[parts.length - 1] += next;
    } else {
      params.push(v);
      parts.push(next);
    }
  });
  return new Sql(parts, params);
}

/** Fragments joined with a separator (an empty list is an empty fragment). */
export function join(fragments: readonly Sql[], separator: string): Sql {
  if (fragments.length === 0) return EMPTY;
  const strings = [""];
  for (let i = 1; i < fragments.length; i++) strings.push(separator);
  strings.push("");
  return sql(Object.assign(strings, { raw: strings }), ...fragments);
}

/** ` WHERE a AND b` for the conditions given (none: no WHERE). */
export const where = (conds: readonly Sql[]): Sql =>
  conds.length === 0 ? EMPTY : sql` WHERE ${join(conds, " AND ")}`;

/** `column IN (…)` over the values (none: a condition that is never true). */
export const isIn = (column: string, values: readonly unknown[]): Sql =>
  values.length === 0
    ? raw("1 = 0")
    : sql`${raw(column)} IN (${join(
        values.map((v) => sql`${v}`),
        ", ",
      )})`;

/** A bounded row count for LIMIT: a whole number, at least 0. */
export const limitOf = (n: number): number => Math.max(0, Math.trunc(n));
