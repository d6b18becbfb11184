// Goldens of the configuration: the `--help` text and what `loadConfig` makes of representative flags and
// environments (every option at least once, every alias, the precedence of flags over the environment, the values
// derived from others, and every error message). They were recorded from the loader as it was before the option
// tables, and the tables must reproduce them exactly: a change here is a change users see.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig, usage } from "../../src/config/load.js";
import { TABLES } from "../../src/config/tables/index.js";

const CWD = "/srv/app";

interface Case {
  name: string;
  argv?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/** Every option set through its flag (the values differ from the defaults). */
const ALL_FLAGS = [
  "--host",
  "0.0.0.0",
  "--port",
  "8080",
  "--data-dir",
  "/var/lib/agents",
  "--database-url",
  "postgres://agents@db:5432/agents",
  "--workspace",
  "/work/ws",
  "--workspace-mode",
  "session",
  "--model",
  "gpt-x",
  "--model-base-url",
  "http://models.internal/v1",
  "--token",
  "s3cret",
  "--allowed-host",
  "API.Example.com",
  "--allowed-host",
  "[::1]",
  "--cors-origin",
  "https://console.example.com",
  "--rate-limit",
  "120",
  "--secret-key-file",
  "keys/secret.key",
  "--allow-private-targets",
  "--webhook-allow-http",
  "--webhook-retry-hours",
  "5",
  "--max-sessions",
  "10",
  "--session-ttl",
  "3600",
  "--turn-timeout",
  "60",
  "--engines",
  "3",
  "--sandbox",
  "read-only",
  "--allow-mcp-stdio",
  "--log-level",
  "debug",
  "--codex-path",
  "/opt/codex",
  "--checkpoints",
  "off",
  "--checkpoint-dir",
  "cp",
  "--checkpoint-max-file-size",
  "2048",
  "--checkpoint-exclude",
  "*.log",
  "--checkpoint-exclude",
  " tmp/ ",
  "--checkpoint-no-default-excludes",
  "--checkpoint-keep",
  "5",
  "--checkpoint-max-age",
  "60",
  "--checkpoint-max-patch",
  "4096",
  "--checkpoint-idle",
  "0",
  "--checkpoint-watch",
  "off",
  "--checkpoint-events",
  "all",
  "--self-hosted-root",
  "/srv/projects",
  "--self-hosted-root",
  "rel/root",
  "--environment-setup-timeout",
  "30",
  "--environment-setup-network",
  "off",
  "--environment-npm-registry",
  "https://npm.internal/",
  "--environment-pip-index-url",
  "https://pypi.internal/simple",
  "--environment-python",
  "python3.12",
  "--environment-system-installer",
  "bin/install",
  "--allow-env-credentials",
  "--secret-keys-previous-file",
  "old.keys",
  "--file-dir",
  "/var/files",
  "--file-size-limit",
  "1000",
];

/** Every option set through its environment variable (no flags). */
const ALL_ENV: Record<string, string> = {
  HOST: "10.0.0.5",
  PORT: "9100",
  AGENT_DATA_DIR: "data",
  DATABASE_URL: "postgresql://u@h/db",
  WORKSPACE: "ws",
  AGENT_WORKSPACE_MODE: "shared",
  CODEX_MODEL: "gpt-env",
  OPENAI_BASE_URL: "https://gw.example/v1",
  OPENAI_API_KEY: "sk-env",
  AGENT_API_TOKEN: "tok-env",
  AGENT_ALLOWED_HOSTS: "a.example, B.example ,",
  AGENT_CORS_ORIGINS: "https://a.example,http://localhost:3000",
  AGENT_RATE_LIMIT: "0",
  AGENT_SECRET_KEY: "k".repeat(44),
  AGENT_SECRET_KEY_FILE: "/etc/agents/key",
  AGENT_ALLOW_PRIVATE_TARGETS: "1",
  AGENT_WEBHOOK_ALLOW_HTTP: "1",
  AGENT_WEBHOOK_RETRY_HOURS: "720",
  AGENT_AUTOMATION_POLL_MS: "50",
  AGENT_MAX_SESSIONS: "1",
  AGENT_SESSION_TTL: "86400",
  AGENT_TURN_TIMEOUT: "1",
  AGENT_ENGINE_POOL_SIZE: "2",
  AGENT_MAX_THREADS_PER_ENGINE: "7",
  AGENT_SANDBOX: "danger-full-access",
  AGENT_ALLOW_MCP_STDIO: "1",
  AGENT_BODY_LIMIT: "1024",
  AGENT_SSE_KEEPALIVE_MS: "10",
  LOG_LEVEL: "warn",
  CODEX_PATH: "/usr/bin/codex",
  AGENT_CLUSTER_DEAD_AFTER: "600",
  AGENT_GOAL_TOKEN_BUDGET: "5",
  AGENT_GOAL_MAX_TURNS: "6",
  AGENT_GOAL_MAX_DURATION: "7",
  AGENT_GOAL_MAX_TOKEN_BUDGET: "8",
  AGENT_GOAL_MAX_TURNS_LIMIT: "9",
  AGENT_GOAL_MAX_DURATION_LIMIT: "10",
  AGENT_CHECKPOINTS: "FALSE",
  AGENT_CHECKPOINT_DIR: "/cp",
  AGENT_CHECKPOINT_MAX_FILE_SIZE: "0",
  AGENT_CHECKPOINT_EXCLUDE: "a/,b/",
  AGENT_CHECKPOINT_DEFAULT_EXCLUDES: "0",
  AGENT_CHECKPOINT_KEEP: "0",
  AGENT_CHECKPOINT_MAX_AGE: "0",
  AGENT_CHECKPOINT_MAX_PATCH: "1024",
  AGENT_CHECKPOINT_IDLE: "86400",
  AGENT_CHECKPOINT_WATCH: "0",
  AGENT_CHECKPOINT_EVENTS: "template",
  AGENT_SELF_HOSTED_ROOTS: "/p1, p2",
  AGENT_ENVIRONMENT_SETUP_TIMEOUT: "86400",
  AGENT_ENVIRONMENT_SETUP_NETWORK: "0",
  AGENT_ENVIRONMENT_NPM_REGISTRY: "http://npm.local",
  AGENT_ENVIRONMENT_PIP_INDEX_URL: "http://pip.local/simple",
  AGENT_ENVIRONMENT_PYTHON: "/usr/bin/python3",
  AGENT_ENVIRONMENT_SYSTEM_INSTALLER: "/usr/local/bin/inst",
  AGENT_ALLOW_ENV_CREDENTIALS: "1",
  AGENT_SECRET_KEYS_PREVIOUS: "old1,old2",
  AGENT_SECRET_KEYS_PREVIOUS_FILE: "prev.keys",
  AGENT_FILE_DIR: "uploads",
  AGENT_FILE_SIZE_LIMIT: "1",
};

const CASES: Case[] = [
  // Defaults and the mock model.
  { name: "defaults" },
  { name: "mock model by flag", argv: ["--mock-model"] },
  { name: "mock model by env", env: { AGENT_MOCK_MODEL: "1" } },
  { name: "AGENT_MOCK_MODEL other than 1 is off", env: { AGENT_MOCK_MODEL: "true" } },
  { name: "mock model with an explicit model", argv: ["--mock-model", "--model", "m2"] },
  // Everything at once, by flags, by environment, and both (flags win).
  { name: "every flag", argv: ALL_FLAGS },
  { name: "every environment variable", env: ALL_ENV },
  { name: "flags win over the environment", argv: ALL_FLAGS, env: ALL_ENV },
  // Paths relative to the working directory and the data dir.
  { name: "relative data dir and derived directories", argv: ["--data-dir", "state"], cwd: "/home/u" },
  { name: "absolute paths are kept as written", argv: ["--data-dir", "/a/b/../c/", "--workspace", "/w/"] },
  { name: "empty data dir is the working directory", argv: ["--data-dir", ""] },
  // Defaults derived from other options.
  {
    name: "a PostgreSQL database turns the checkpoint watch off unless asked for",
    argv: ["--database-url", "postgres://a@db/agents"],
  },
  {
    name: "the checkpoint watch asked for with PostgreSQL",
    argv: ["--database-url", "postgres://a@db/agents", "--checkpoint-watch", "on"],
  },
  // The provider.
  {
    name: "custom base URL with a key",
    argv: ["--model-base-url", "http://m/v1"],
    env: { OPENAI_API_KEY: "k" },
  },
  { name: "empty base URL and key are not set", env: { OPENAI_BASE_URL: "", OPENAI_API_KEY: "" } },
  // The token, its alias, empty values.
  { name: "token from the alias", env: { EBX_SERVER_TOKEN: "ebx" } },
  { name: "AGENT_API_TOKEN wins over the alias", env: { AGENT_API_TOKEN: "a", EBX_SERVER_TOKEN: "ebx" } },
  {
    name: "an empty --token does not hide the env token",
    argv: ["--token", ""],
    env: { AGENT_API_TOKEN: "a" },
  },
  // Binds, loopback detection, Host names, origins.
  { name: "public bind without a token", argv: ["--host", "0.0.0.0"] },
  { name: "public bind with --insecure-no-auth", argv: ["--host", "0.0.0.0", "--insecure-no-auth"] },
  { name: "public bind with a token from the env", argv: ["--host", "::"], env: { AGENT_API_TOKEN: "t" } },
  { name: "127.0.0.0/8 is loopback", argv: ["--host", "127.1.2.3"] },
  { name: "IPv4-mapped loopback", argv: ["--host", "::ffff:127.0.0.1"] },
  { name: "::1 and LOCALHOST are loopback", env: { HOST: "LOCALHOST" } },
  { name: "a host name that looks like loopback is not", argv: ["--host", "127.x.com"] },
  { name: "an empty HOST is not loopback", env: { HOST: "" } },
  {
    name: "extra Host names on a public bind",
    argv: ["--host", "0.0.0.0", "--insecure-no-auth", "--allowed-host", "x.io"],
  },
  { name: "a Host name with a scheme", argv: ["--allowed-host", "http://x.io"] },
  { name: "a Host name with a port", env: { AGENT_ALLOWED_HOSTS: "x.io:80" } },
  {
    name: "allowed-host flags hide the env list",
    argv: ["--allowed-host", "a.io"],
    env: { AGENT_ALLOWED_HOSTS: "b.io" },
  },
  { name: "a CORS origin with a path", argv: ["--cors-origin", "https://x.io/"] },
  { name: "a CORS origin that is no URL", env: { AGENT_CORS_ORIGINS: "x.io" } },
  // Integers: range errors, accepted forms, empty values, labels.
  { name: "port not a number", argv: ["--port", "abc"] },
  { name: "port out of range", env: { PORT: "70000" } },
  { name: "an empty port flag is the default, not the env", argv: ["--port", ""], env: { PORT: "1234" } },
  {
    name: "integers as Number() reads them",
    argv: ["--port", " 0x10 ", "--engines", "1e1", "--max-sessions", "3.0"],
  },
  { name: "rate limit default on a public bind", argv: ["--host", "0.0.0.0", "--token", "t"] },
  { name: "a negative value needs =", argv: ["--rate-limit", "-1"] },
  { name: "rate limit below zero", argv: ["--rate-limit=-1"] },
  { name: "webhook retry hours out of range", argv: ["--webhook-retry-hours", "0"] },
  { name: "automation poll too fast", env: { AGENT_AUTOMATION_POLL_MS: "10" } },
  { name: "max sessions zero (labelled by its env name)", argv: ["--max-sessions", "0"] },
  { name: "session ttl negative", env: { AGENT_SESSION_TTL: "-5" } },
  { name: "turn timeout zero", argv: ["--turn-timeout", "0"] },
  { name: "engines zero", argv: ["--engines", "0"] },
  { name: "threads per engine zero", env: { AGENT_MAX_THREADS_PER_ENGINE: "0" } },
  { name: "body limit not a number", env: { AGENT_BODY_LIMIT: "big" } },
  { name: "keep-alive too short", env: { AGENT_SSE_KEEPALIVE_MS: "9" } },
  { name: "cluster dead-after too short", env: { AGENT_CLUSTER_DEAD_AFTER: "2" } },
  { name: "a goal limit of zero", env: { AGENT_GOAL_MAX_TURNS_LIMIT: "0" } },
  { name: "a goal default not an integer", env: { AGENT_GOAL_TOKEN_BUDGET: "1.5" } },
  {
    name: "empty model and log level are kept",
    argv: ["--model", "", "--log-level", ""],
    env: { CODEX_MODEL: "m" },
  },
  { name: "an empty self-hosted root flag is the default", argv: ["--self-hosted-root", ""] },
  // Choices.
  { name: "unknown sandbox", argv: ["--sandbox", "none"] },
  { name: "empty sandbox", env: { AGENT_SANDBOX: "" } },
  { name: "unknown workspace mode", env: { AGENT_WORKSPACE_MODE: "per-turn" } },
  // The database.
  { name: "database URL not PostgreSQL", argv: ["--database-url", "mysql://h/db"] },
  { name: "database URL not a URL", env: { DATABASE_URL: "agents.db" } },
  { name: "empty database URL is SQLite", env: { DATABASE_URL: "" } },
  // Private targets and their former names.
  { name: "--webhook-allow-private is the former name", argv: ["--webhook-allow-private"] },
  { name: "AGENT_WEBHOOK_ALLOW_PRIVATE is the former name", env: { AGENT_WEBHOOK_ALLOW_PRIVATE: "1" } },
  {
    name: "either env name turns private targets on",
    env: { AGENT_ALLOW_PRIVATE_TARGETS: "0", AGENT_WEBHOOK_ALLOW_PRIVATE: "1" },
  },
  { name: "switches only take 1", env: { AGENT_ALLOW_MCP_STDIO: "true", AGENT_WEBHOOK_ALLOW_HTTP: "yes" } },
  // Checkpoints.
  { name: "checkpoints ON (any case)", argv: ["--checkpoints", "ON"] },
  { name: "checkpoints neither on nor off", env: { AGENT_CHECKPOINTS: "Maybe" } },
  { name: "checkpoint excludes from the env", env: { AGENT_CHECKPOINT_EXCLUDE: " *.tmp , ,cache/" } },
  { name: "default excludes kept unless 0", env: { AGENT_CHECKPOINT_DEFAULT_EXCLUDES: "1" } },
  { name: "a checkpoint exclude with a newline", argv: ["--checkpoint-exclude", "a\nb"] },
  { name: "unknown checkpoint events", argv: ["--checkpoint-events", "official"] },
  { name: "checkpoint patch limit too small", argv: ["--checkpoint-max-patch", "1023"] },
  { name: "checkpoint idle too long", env: { AGENT_CHECKPOINT_IDLE: "86401" } },
  { name: "checkpoint file size negative", argv: ["--checkpoint-max-file-size=-1"] },
  {
    name: "an empty exclude flag hides the env list",
    argv: ["--checkpoint-exclude", ""],
    env: { AGENT_CHECKPOINT_EXCLUDE: "x/" },
  },
  { name: "empty checkpoints switch", argv: ["--checkpoints", ""] },
  // Environments and vaults.
  { name: "setup network TRUE", env: { AGENT_ENVIRONMENT_SETUP_NETWORK: "TRUE" } },
  { name: "setup network neither on nor off", argv: ["--environment-setup-network", "Sometimes"] },
  { name: "setup timeout too long", argv: ["--environment-setup-timeout", "86401"] },
  { name: "npm registry not a URL", argv: ["--environment-npm-registry", "npm.internal"] },
  { name: "pip index not a URL", env: { AGENT_ENVIRONMENT_PIP_INDEX_URL: "pypi" } },
  {
    name: "empty values of the environment settings",
    argv: ["--environment-python", "", "--environment-npm-registry", ""],
    env: {
      AGENT_ENVIRONMENT_PYTHON: "py",
      AGENT_ENVIRONMENT_SYSTEM_INSTALLER: "",
      AGENT_SECRET_KEYS_PREVIOUS: "",
    },
  },
  {
    name: "self-hosted roots default to the workspace",
    argv: ["--workspace", "ws"],
    env: { AGENT_SELF_HOSTED_ROOTS: " , " },
  },
  // Files.
  { name: "file dir inside the workspace", argv: ["--workspace", "/srv/w", "--file-dir", "/srv/w/files"] },
  { name: "workspace inside the file dir", env: { AGENT_FILE_DIR: "/srv", WORKSPACE: "/srv/w" } },
  { name: "file dir equal to the workspace", argv: ["--workspace", "w", "--file-dir", "w/"] },
  { name: "file size limit zero", argv: ["--file-size-limit", "0"] },
  {
    name: "an empty --file-dir falls back to the env",
    argv: ["--file-dir", ""],
    env: { AGENT_FILE_DIR: "/f" },
  },
  // What node's parseArgs refuses.
  { name: "unknown flag", argv: ["--nope"] },
  { name: "flag without its value", argv: ["--port"] },
  { name: "switch given a value", argv: ["--mock-model=yes"] },
  { name: "positional argument", argv: ["extra"] },
  { name: "a repeated single flag keeps the last", argv: ["--port", "1", "--port", "2"] },
];

/** JSON with sorted keys; `undefined` spelled out (a key that is present but undefined is part of the shape). */
function stable(value: unknown): string {
  const norm = (v: unknown): unknown => {
    if (v === undefined) return "(undefined)";
    if (Array.isArray(v)) return v.map(norm);
    if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      return Object.fromEntries(
        Object.keys(o)
          .sort()
          .map((k) => [k, norm(o[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(norm(value), null, 2);
}

function outcome(c: Case): unknown {
  try {
    return { config: loadConfig(c.argv ?? [], c.env ?? {}, c.cwd ?? CWD) };
  } catch (err) {
    if (err instanceof ConfigError) return { error: { ConfigError: err.message } };
    if (err instanceof TypeError) {
      return { error: { TypeError: err.message, code: (err as NodeJS.ErrnoException).code } };
    }
    throw err;
  }
}

describe("configuration goldens", () => {
  test("the usage text", async () => {
    await expect(usage()).toMatchFileSnapshot("goldens/usage.txt");
  });

  test("loadConfig of representative flags and environments", async () => {
    const names = CASES.map((c) => c.name);
    expect(new Set(names).size, "case names are unique").toBe(names.length);
    const results = Object.fromEntries(CASES.map((c) => [c.name, { input: c, ...(outcome(c) as object) }]));
    await expect(`${stable(results)}\n`).toMatchFileSnapshot("goldens/load-cases.json");
  });
});

describe("the tables and the documentation", () => {
  const rows = TABLES.flatMap((t) => Object.values(t.rows));

  test("a row in the usage names its environment variables there", () => {
    // The one exception predates this test; the README names it.
    const unnamed = new Set(["AGENT_MOCK_MODEL"]);
    for (const row of rows.filter((r) => r.help.length > 0)) {
      const help = row.help.join(" ");
      for (const name of row.env.filter((n: string) => !unnamed.has(n)))
        expect(help, `--${row.flags[0]}`).toContain(name);
    }
  });

  test("the server README names every flag and environment variable", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const row of rows) {
      for (const flag of row.flags) expect(readme.includes(`\`--${flag}`), `--${flag}`).toBe(true);
      for (const name of row.env) expect(readme.includes(`\`${name}`), name).toBe(true);
    }
  });

  test("with several bad values, the first in usage order is named", () => {
    expect(() => loadConfig(["--sandbox", "none", "--port", "x"], {}, CWD)).toThrow(/^--port /);
    expect(() => loadConfig(["--host", "0.0.0.0", "--checkpoint-keep", "x"], {}, CWD)).toThrow(
      /^--checkpoint-keep /,
    );
  });
});

describe("values from files (NAME_FILE)", () => {
  const withDir = (fn: (dir: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), "cas-config-file-"));
    try {
      fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test("a variable's value comes from the file its _FILE names, without the trailing line break", () => {
    withDir((dir) => {
      writeFileSync(join(dir, "token"), "s3cret-from-file\n");
      writeFileSync(join(dir, "db"), "postgres://agents:pw@db:5432/agents\r\n");
      const config = loadConfig(
        [],
        { AGENT_API_TOKEN_FILE: join(dir, "token"), DATABASE_URL_FILE: "db", HOST: "0.0.0.0" },
        dir,
      );
      expect(config.token).toBe("s3cret-from-file");
      expect(config.databaseUrl).toBe("postgres://agents:pw@db:5432/agents");
    });
  });

  test("the variable itself and the flag win over its file; a missing file is an error naming the variable", () => {
    withDir((dir) => {
      writeFileSync(join(dir, "token"), "from-file");
      const env = { AGENT_API_TOKEN_FILE: join(dir, "token"), AGENT_API_TOKEN: "from-env" };
      expect(loadConfig([], env, dir).token).toBe("from-env");
      expect(
        loadConfig(["--token", "from-flag"], { AGENT_API_TOKEN_FILE: join(dir, "token") }, dir).token,
      ).toBe("from-flag");
      expect(() => loadConfig([], { OPENAI_API_KEY_FILE: join(dir, "nope") }, dir)).toThrow(ConfigError);
      expect(() => loadConfig([], { OPENAI_API_KEY_FILE: join(dir, "nope") }, dir)).toThrow(
        /^OPENAI_API_KEY_FILE: cannot read .*nope \(ENOENT\)/,
      );
    });
  });

  test("a _FILE that is an option of its own keeps its meaning (AGENT_SECRET_KEY_FILE: the key file's path)", () => {
    withDir((dir) => {
      writeFileSync(join(dir, "key"), `${Buffer.alloc(32, 1).toString("base64")}\n`);
      const config = loadConfig([], { AGENT_SECRET_KEY_FILE: join(dir, "key") }, dir);
      expect(config.secretKeyFile).toBe(join(dir, "key"));
      expect(config.secretKey).toBeNull();
    });
  });

  test("AGENT_INSECURE_NO_AUTH=1 is --insecure-no-auth", () => {
    expect(() => loadConfig(["--host", "0.0.0.0"], {}, CWD)).toThrow(ConfigError);
    expect(loadConfig(["--host", "0.0.0.0"], { AGENT_INSECURE_NO_AUTH: "1" }, CWD).token).toBeNull();
  });
});
