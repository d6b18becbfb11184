/**
 * Reading tables: argv through node:util parseArgs (the spec made from the rows), then every row in table order.
 * Every variable a row reads may instead name a file that holds its value: `NAME_FILE=/run/secrets/x` (the
 * convention of container secrets), read when `NAME` itself is not set.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { ConfigError, type ConfigOf, type Get, type Option, type Table } from "./option.js";

type ParseSpec = NonNullable<ParseArgsConfig["options"]>;

/** parseArgs options: each row's flags (several for a row with former names). */
export function specOf(tables: readonly Table[]): ParseSpec {
  const spec: ParseSpec = {};
  for (const t of tables) {
    for (const option of Object.values(t.rows)) {
      for (const flag of option.flags) {
        if (flag in spec) throw new Error(`two options have the flag --${flag}`);
        spec[flag] =
          option.kind === "toggle"
            ? { type: "boolean" }
            : option.kind === "list"
              ? { type: "string", multiple: true }
              : { type: "string" };
      }
    }
  }
  return spec;
}

/**
 * A reader of the tables' configuration. Each option is read once, when first needed: in table order, or earlier
 * by a default or a computed value that depends on it; then the tables' checks run, in order. Unknown flags, a
 * flag without its value and positional arguments are parseArgs' errors (TypeError).
 */
export function reader<const Ts extends readonly Table[]>(
  tables: Ts,
): (argv: string[], env: NodeJS.ProcessEnv, cwd: string) => ConfigOf<Ts> {
  const spec = specOf(tables);
  for (const t of tables) {
    const seen = new Set<string>();
    for (const other of tables) {
      if (other.path !== t.path) continue;
      for (const key of Object.keys(other.rows)) {
        if (seen.has(key)) throw new Error(`two options land at ${t.path ?? "config"}.${key}`);
        seen.add(key);
      }
    }
  }
  const declared = new Set(tables.flatMap((t) => Object.values(t.rows).flatMap((o) => o.env)));
  // (a variable whose NAME_FILE is an option of its own, AGENT_SECRET_KEY_FILE, keeps that option's meaning)
  const variables = [...declared].filter((name) => !declared.has(`${name}_FILE`));
  return (argv, rawEnv, cwd) => {
    const { values } = parseArgs({ args: argv, options: spec, strict: true, allowPositionals: false });
    const sources = { flags: values, env: withFileVariables(rawEnv, variables, cwd), cwd };
    const known = new Map<Option<unknown, boolean>, { value: unknown } | "reading">();
    const get: Get = <T>(option: Option<T, boolean>): T => {
      const k = known.get(option);
      if (k === "reading") throw new Error("an option's default depends on itself");
      if (k) return k.value as T;
      known.set(option, "reading");
      const value = option.read(sources, get);
      known.set(option, { value });
      return value;
    };
    const config: Record<string, unknown> = {};
    for (const t of tables) {
      if (t.path !== null) config[t.path] ??= {};
      const into = (t.path === null ? config : config[t.path]) as Record<string, unknown>;
      for (const [key, option] of Object.entries(t.rows)) {
        const value = get(option);
        if (!option.input) into[key] = value;
      }
    }
    for (const t of tables) for (const check of t.checks) check(get);
    return config as ConfigOf<Ts>;
  };
}

/**
 * `env` with each of `names` that is unset but has a `NAME_FILE` set to the content of that file (its trailing line
 * break dropped). A file that cannot be read is a ConfigError naming the variable; an empty file is an empty value.
 */
export function withFileVariables(
  env: NodeJS.ProcessEnv,
  names: readonly string[],
  cwd: string,
): NodeJS.ProcessEnv {
  let out: NodeJS.ProcessEnv | null = null;
  for (const name of names) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file === "" || env[name] !== undefined) continue;
    let content: string;
    try {
      content = readFileSync(resolve(cwd, file), "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new ConfigError(`${name}_FILE: cannot read ${file} (${code})`);
    }
    out ??= { ...env };
    out[name] = content.replace(/\r?\n$/, "");
  }
  return out ?? env;
}
