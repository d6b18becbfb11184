/**
 * Options as declarative rows. A row names its flag(s), environment variable(s), the zod schema its text goes
 * through, its default and its usage lines; tables (`table(path, rows)`) group the rows of one area and say where
 * their values land in `Config`. From the tables come the `parseArgs` spec, the usage text and the `Config` type
 * (`ConfigOf`), so an option is written once. Reading rules, the same for every row:
 * - flags win over the environment; several flags or variables (former names, aliases) are read in order;
 * - a value row takes the first source given; what an empty one means is its `blank` rule;
 * - a list row takes its flag repeated, else the variable split at commas; items are trimmed, empty ones dropped,
 *   and no item at all is the default;
 * - a toggle is on when its flag is given or a variable holds `envOn` ("1"); it cannot be turned off by a flag;
 * - `path: true` resolves relative paths (and the default) against the working directory;
 * - a schema's first issue is the error: `${label} ${issue.message}` (label: the flag, else the variable).
 */
import { isAbsolute, resolve } from "node:path";
import type { z } from "zod";

/** A bad flag or environment value (or a bad combination): the CLI prints the message and exits with 2. */
export class ConfigError extends Error {}

/** What an option reads: the parsed flags, the environment, and where relative paths start. */
export interface Sources {
  readonly flags: Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

/** The value of another option, read on demand and once: defaults, computed values and checks use it. */
export type Get = <T>(option: Option<T, boolean>) => T;

/** One row of a table. `I`: an input only (read and checked, but no field of `Config`). */
export interface Option<T, I extends boolean = false> {
  readonly kind: "value" | "list" | "toggle" | "computed";
  readonly flags: readonly string[];
  readonly env: readonly string[];
  /** The argument after the flag in the usage text ("<n>"). */
  readonly arg: string | undefined;
  /** Its lines in the usage text; none: not shown there. */
  readonly help: readonly string[];
  /** Its name in error messages. */
  readonly label: string;
  readonly input: I;
  readonly read: (sources: Sources, get: Get) => T;
}

/**
 * What an empty string given for a value row means:
 * - `default`: the row's default, whichever source gave it (an empty `--port` is 9000 whatever PORT holds);
 * - `unset`: nothing was given, the next source decides (an empty `--token` leaves AGENT_API_TOKEN in force);
 * - `value`: a value like any other, for the schema to take or refuse (kept where it always was so: an empty
 *   `--host` is the host "", which is not loopback).
 */
export type Blank = "default" | "unset" | "value";

interface Described<I extends boolean> {
  /** Without the dashes. Several: the first is shown, the others are former names still read. */
  flag?: string | readonly string[];
  /** Read after the flags, in order (aliases). */
  env?: string | readonly string[];
  arg?: string;
  /** Usage lines, written as they are printed (environment variables in brackets, the default). */
  help?: string | readonly string[];
  /** The name in error messages (default: `--flag`, else the first variable). */
  label?: string;
  input?: I;
}

type Default<D> = D | ((get: Get) => D);

const many = (v: string | readonly string[] | undefined): readonly string[] =>
  v === undefined ? [] : typeof v === "string" ? [v] : v;

function described<I extends boolean>(spec: Described<I>) {
  const flags = many(spec.flag);
  const env = many(spec.env);
  const label = spec.label ?? (flags[0] !== undefined ? `--${flags[0]}` : (env[0] ?? "option"));
  return { flags, env, arg: spec.arg, help: many(spec.help), input: (spec.input ?? false) as I, label };
}

function defaultOf<D>(d: Default<D>, get: Get): D {
  return typeof d === "function" ? (d as (get: Get) => D)(get) : d;
}

function parse<T, In>(schema: z.ZodType<T, In>, raw: In, label: string): T {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  throw new ConfigError(`${label} ${result.error.issues[0]?.message ?? "is not valid"}`);
}

function resolvePaths<T>(value: T, cwd: string): T {
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(cwd, p));
  if (typeof value === "string") return abs(value) as T;
  if (Array.isArray(value)) return value.map((v) => (typeof v === "string" ? abs(v) : v)) as T;
  return value;
}

/** One string: a flag's value, else the first variable's. */
export function value<T, const D extends NoInfer<T> | null | undefined = T, I extends boolean = false>(
  spec: Described<I> & {
    schema: z.ZodType<T, string>;
    default: Default<D>;
    blank?: Blank;
    path?: boolean;
  },
): Option<T | D, I> {
  const d = described(spec);
  const blank = spec.blank ?? "default";
  const names = [...d.flags.map((f) => ({ flag: f })), ...d.env.map((e) => ({ env: e }))];
  return {
    ...d,
    kind: "value",
    read(sources, get) {
      let raw: string | undefined;
      for (const n of names) {
        const v = "flag" in n ? sources.flags[n.flag] : sources.env[n.env];
        if (typeof v !== "string" || (blank === "unset" && v === "")) continue;
        raw = v;
        break;
      }
      const result: T | D =
        raw === undefined || (raw === "" && blank === "default")
          ? defaultOf(spec.default, get)
          : parse(spec.schema, raw, d.label);
      return spec.path ? resolvePaths(result, sources.cwd) : result;
    },
  };
}

/** Repeatable: the flag's values, else the first variable split at commas. */
export function list<T, I extends boolean = false>(
  spec: Described<I> & { schema: z.ZodType<T, string[]>; default: Default<NoInfer<T>>; path?: boolean },
): Option<T, I> {
  const d = described(spec);
  return {
    ...d,
    kind: "list",
    read(sources, get) {
      const flag = d.flags.map((f) => sources.flags[f]).find((v) => Array.isArray(v));
      const variable = d.env.map((e) => sources.env[e]).find((v) => v !== undefined);
      const items = (flag?.map(String) ?? (variable ?? "").split(","))
        .map((v) => v.trim())
        .filter((v) => v !== "");
      const result: T =
        items.length === 0 ? defaultOf(spec.default, get) : parse(spec.schema, items, d.label);
      return spec.path ? resolvePaths(result, sources.cwd) : result;
    },
  };
}

/** A switch: on when its flag is given or a variable holds `envOn` ("1"); off otherwise. */
export function toggle<I extends boolean = false>(
  spec: Omit<Described<I>, "arg" | "label"> & { envOn?: string },
): Option<boolean, I> {
  const d = described(spec);
  const on = spec.envOn ?? "1";
  return {
    ...d,
    kind: "toggle",
    read: (sources) =>
      d.flags.some((f) => sources.flags[f] === true) || d.env.some((e) => sources.env[e] === on),
  };
}

/** A field made from other options (no flag, no variable of its own). */
export function computed<T>(make: (get: Get) => T): Option<T> {
  return {
    kind: "computed",
    flags: [],
    env: [],
    arg: undefined,
    help: [],
    label: "",
    input: false,
    read: (_, get) => make(get),
  };
}

export type Rows = Readonly<Record<string, Option<unknown, boolean>>>;

/** The options of one area; `path`: the `Config` key their fields land under (null: the top level). */
export interface Table<P extends string | null = string | null, R extends Rows = Rows> {
  readonly path: P;
  readonly rows: R;
  /** Rules across options, run once every option was read (in table order). */
  readonly checks: readonly ((get: Get) => void)[];
}

export function table<const P extends string | null, R extends Rows>(
  path: P,
  rows: R,
  checks: readonly ((get: Get) => void)[] = [],
): Table<P, R> {
  return { path, rows, checks };
}

type FieldsOf<R extends Rows> = {
  -readonly [K in keyof R as R[K] extends Option<unknown, true> ? never : K]: R[K] extends Option<
    infer T,
    boolean
  >
    ? T
    : never;
};
type Placed<T> =
  T extends Table<infer P, infer R> ? (P extends string ? { [K in P]: FieldsOf<R> } : FieldsOf<R>) : never;
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The configuration the tables describe: each table's fields (inputs aside) at its path. */
export type ConfigOf<Ts extends readonly Table[]> =
  Intersection<Placed<Ts[number]>> extends infer C ? { [K in keyof C]: C[K] } : never;
