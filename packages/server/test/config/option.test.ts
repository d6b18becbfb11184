// The option-table machinery (config/option.ts, read.ts, usage.ts) on tables made for the test: how a row reads
// its flags and variables, what an empty value means, lists, switches, paths, computed values and inputs,
// defaults that depend on other rows, checks, the usage layout, and the mistakes a table author could make.
import { describe, expect, expectTypeOf, test } from "vitest";
import { ConfigError, computed, list, table, toggle, value } from "../../src/config/option.js";
import { reader } from "../../src/config/read.js";
import { int, oneOf, text } from "../../src/config/schemas.js";
import { usageOf } from "../../src/config/usage.js";

const CWD = "/srv/app";

describe("value rows", () => {
  const name = value({
    flag: ["name", "old-name"],
    env: ["APP_NAME", "LEGACY_NAME"],
    schema: text,
    default: "d",
  });
  const read = reader([table(null, { name })] as const);

  test("flags win over variables; several of each are read in order", () => {
    expect(read([], {}, CWD).name).toBe("d");
    expect(read([], { LEGACY_NAME: "l" }, CWD).name).toBe("l");
    expect(read([], { LEGACY_NAME: "l", APP_NAME: "a" }, CWD).name).toBe("a");
    expect(read(["--old-name", "o"], { APP_NAME: "a" }, CWD).name).toBe("o");
    expect(read(["--old-name", "o", "--name", "n"], { APP_NAME: "a" }, CWD).name).toBe("n");
  });

  test("an empty value: the default, the next source, or a value of its own", () => {
    const row = (blank: "default" | "unset" | "value") =>
      reader([
        table(null, { v: value({ flag: "v", env: "V", schema: text, default: "d", blank }) }),
      ] as const);
    expect(row("default")(["--v", ""], { V: "env" }, CWD).v).toBe("d");
    expect(row("unset")(["--v", ""], { V: "env" }, CWD).v).toBe("env");
    expect(row("unset")(["--v", ""], { V: "" }, CWD).v).toBe("d");
    expect(row("value")(["--v", ""], { V: "env" }, CWD).v).toBe("");
  });

  test("the schema's issue is the error, after the flag (or the variable, or the label)", () => {
    const t = table(null, {
      n: value({ flag: "n", env: "N", schema: int({ min: 1, max: 3 }), default: 1 }),
      e: value({ env: "E", schema: oneOf(["a", "b"], "a or b"), default: "a" }),
      l: value({ flag: "l", env: "L", label: "L", schema: int(), default: 0 }),
    });
    const r = reader([t] as const);
    expect(() => r([], { N: "4" }, CWD)).toThrow(
      new ConfigError('--n must be an integer between 1 and 3, got "4"'),
    );
    expect(() => r([], { E: "c" }, CWD)).toThrow(new ConfigError('E must be a or b, got "c"'));
    expect(() => r(["--l", "x"], {}, CWD)).toThrow(new ConfigError('L must be an integer >= 0, got "x"'));
    expect(r([], { E: "b", N: "3" }, CWD)).toEqual({ n: 3, e: "b", l: 0 });
  });

  test("paths are resolved against the working directory, the default too; absolute ones kept as written", () => {
    const r = reader([
      table(null, { dir: value({ flag: "dir", schema: text, default: "data", path: true }) }),
    ] as const);
    expect(r([], {}, CWD).dir).toBe("/srv/app/data");
    expect(r(["--dir", "../x"], {}, CWD).dir).toBe("/srv/x");
    expect(r(["--dir", "/a/../b/"], {}, CWD).dir).toBe("/a/../b/");
  });
});

describe("lists and switches", () => {
  const items = list({
    flag: "item",
    env: "ITEMS",
    schema: oneOf(["a", "b"], "a or b").array(),
    default: ["a"],
  });
  const on = toggle({ flag: ["on", "old-on"], env: ["ON", "OLD_ON"] });
  const off = toggle({ flag: "no-thing", env: "THING", envOn: "0" });
  const read = reader([table(null, { items, on, off })] as const);

  test("a list: the flag repeated hides the variable; items trimmed, empty ones dropped; none is the default", () => {
    expect(read([], {}, CWD).items).toEqual(["a"]);
    expect(read([], { ITEMS: " b, ,a " }, CWD).items).toEqual(["b", "a"]);
    expect(read(["--item", "b", "--item", " b "], { ITEMS: "a" }, CWD).items).toEqual(["b", "b"]);
    expect(read(["--item", " "], { ITEMS: "b" }, CWD).items).toEqual(["a"]);
    expect(() => read([], { ITEMS: "a,c" }, CWD)).toThrow(new ConfigError('--item must be a or b, got "c"'));
  });

  test("a switch is on by any of its flags or by a variable holding its `envOn`", () => {
    expect(read([], {}, CWD)).toMatchObject({ on: false, off: false });
    expect(read(["--old-on"], {}, CWD).on).toBe(true);
    expect(read([], { OLD_ON: "1", ON: "0" }, CWD).on).toBe(true);
    expect(read([], { ON: "true" }, CWD).on).toBe(false);
    expect(read([], { THING: "0" }, CWD).off).toBe(true);
    expect(read([], { THING: "1" }, CWD).off).toBe(false);
    expect(() => read(["--on=1"], {}, CWD)).toThrow(TypeError);
  });
});

describe("inputs, computed values, defaults from other rows, checks", () => {
  const base = value({ flag: "base", schema: text, default: "/b", path: true });
  const secret = value({ flag: "secret", schema: text, default: null, input: true });
  const later = table("later", {
    sub: value({ flag: "sub", schema: text, default: (get) => `${get(base)}/sub`, path: true }),
  });
  const first = table(null, { secret, hasSecret: computed((get) => get(secret) !== null), base }, [
    (get) => {
      if (get(secret) === "bad") throw new ConfigError("no bad secrets");
    },
  ]);
  const more = table("later", { extra: value({ flag: "extra", schema: int(), default: 1 }) });
  const read = reader([later, first, more] as const);

  test("the type: inputs are no fields; tables of one path share its object", () => {
    expectTypeOf(read).returns.toEqualTypeOf<{
      hasSecret: boolean;
      base: string;
      later: { sub: string } & { extra: number };
    }>();
  });

  test("an input is read, not kept; a computed value and a default may read rows of any table", () => {
    expect(read([], {}, CWD)).toEqual({ hasSecret: false, base: "/b", later: { sub: "/b/sub", extra: 1 } });
    expect(read(["--secret", "s", "--base", "rel"], {}, CWD)).toEqual({
      hasSecret: true,
      base: "/srv/app/rel",
      later: { sub: "/srv/app/rel/sub", extra: 1 },
    });
  });

  test("checks run once every row was read: a bad value of a row is reported before them", () => {
    expect(() => read(["--secret", "bad"], {}, CWD)).toThrow(new ConfigError("no bad secrets"));
    expect(() => read(["--secret", "bad", "--extra", "x"], {}, CWD)).toThrow(/^--extra must be an integer/);
  });

  test("with several bad values, the first row in table order is reported", () => {
    const t = table(null, {
      a: value({ flag: "a", schema: int(), default: 0 }),
      b: value({ flag: "b", schema: int(), default: 0 }),
    });
    expect(() => reader([t] as const)(["--b", "x", "--a", "y"], {}, CWD)).toThrow(/^--a /);
  });
});

describe("mistakes a table author could make", () => {
  test("two rows with one flag", () => {
    const t = table(null, {
      a: toggle({ flag: "same" }),
      b: value({ flag: "same", schema: text, default: "" }),
    });
    expect(() => reader([t] as const)).toThrow("two options have the flag --same");
  });

  test("two rows landing at one field", () => {
    const a = table("s", { x: toggle({ flag: "a" }) });
    const b = table("s", { x: toggle({ flag: "b" }) });
    expect(() => reader([a, b] as const)).toThrow("two options land at s.x");
  });

  test("a default that depends on itself", () => {
    const self: ReturnType<typeof value<string>> = value({
      flag: "self",
      schema: text,
      default: (get): string => get(self),
    });
    expect(() => reader([table(null, { self })] as const)([], {}, CWD)).toThrow(/depends on itself/);
  });
});

test("the usage layout: help in a column, long flags on a line of their own, variable-only rows continue", () => {
  const t = table(null, {
    a: value({ flag: "a", arg: "<n>", schema: int(), default: 0, help: ["first line", "second line"] }),
    long: toggle({ flag: "a-flag-long-enough-to-wrap", help: "alone" }),
    edge: value({ flag: "exactly-26-chars", arg: "<cmd>", schema: text, default: "", help: "fits" }),
    env: value({ env: "ONLY_ENV", schema: int(), default: 0, help: "(ONLY_ENV: continues)" }),
    hidden: value({ env: "HIDDEN", schema: int(), default: 0 }),
  });
  expect(usageOf([t])).toBe(
    [
      "Usage: codex-agent-api [serve] [options]   (serve is the default command)",
      "",
      "Options (environment variable in brackets):",
      "  --a <n>                    first line",
      "                             second line",
      "  --a-flag-long-enough-to-wrap",
      "                             alone",
      "  --exactly-26-chars <cmd>   fits",
      "                             (ONLY_ENV: continues)",
      "",
    ].join("\n"),
  );
});
