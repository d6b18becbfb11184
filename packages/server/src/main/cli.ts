import { parseArgs } from "node:util";
import { ConfigError, loadConfig, usage } from "../config/load.js";
import { KeyService } from "../domain/keys.js";
import { systemClock } from "../kernel/clock.js";
import { ApiError } from "../kernel/errors.js";
import { type DirLock, DirLockedError, lockDirectory } from "./dir-lock.js";
import { doctor, formatReport, startUpChecks } from "./doctor.js";
import { createLogger, openStore, startService } from "./service.js";

const KEYS_USAGE = `Usage:
  codex-agent-api keys create --project NAME [--admin] [--data-dir DIR]   prints the new key (shown once) as JSON
  codex-agent-api keys list [--data-dir DIR]                              one JSON line per key
  codex-agent-api keys revoke ID [--data-dir DIR]
  (with PostgreSQL: --database-url URL, or DATABASE_URL, instead of --data-dir)
`;

async function keys(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      project: { type: "string" },
      admin: { type: "boolean" },
      "data-dir": { type: "string" },
      "database-url": { type: "string" },
    },
    strict: true,
    allowPositionals: true,
  });
  const [action, ...rest] = positionals;
  const config = loadConfig([
    ...(values["data-dir"] ? ["--data-dir", values["data-dir"]] : []),
    ...(values["database-url"] ? ["--database-url", values["database-url"]] : []),
  ]);
  const store = await openStore(config);
  const service = new KeyService(store, systemClock);
  const print = (v: unknown) => process.stdout.write(`${JSON.stringify(v)}\n`);
  try {
    if (action === "create") {
      if (!values.project) throw new ConfigError(`keys create needs --project NAME\n\n${KEYS_USAGE}`);
      print(await service.create(values.project, values.admin ?? false));
    } else if (action === "list") {
      for (const k of await service.list()) print(k);
    } else if (action === "revoke" && rest.length === 1) {
      await service.revoke(rest[0]!);
      print({ id: rest[0], revoked: true });
    } else {
      process.stderr.write(KEYS_USAGE);
      return 2;
    }
    return 0;
  } catch (err) {
    if (err instanceof ApiError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  } finally {
    await store.close();
  }
}

const DOCTOR_USAGE = `Usage:
  codex-agent-api doctor [--json] [serve options]   checks this host and this configuration; exit 1 on an error
`;

async function doctorCommand(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(DOCTOR_USAGE);
    return 0;
  }
  const config = loadConfig(argv.filter((a) => a !== "--json"));
  const report = await doctor(config);
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report.status === "error" ? 1 : 0;
}

async function serve(argv: string[]): Promise<number> {
  const config = loadConfig(argv);
  const logger = createLogger(config.logLevel);
  // Signals are caught from here on: one that arrives while the service starts stops it once it is up (instead
  // of killing the process with the engines half-started).
  let received: NodeJS.Signals | null = null;
  let onSignal: ((signal: NodeJS.Signals) => void) | null = null;
  const catchSignal = (signal: NodeJS.Signals) => {
    if (onSignal) onSignal(signal);
    else received ??= signal;
  };
  process.once("SIGTERM", catchSignal);
  process.once("SIGINT", catchSignal);
  // One instance per data directory, before anything is written there (the engine's config, the database, the
  // mock model): a second one would rewrite the first one's engine configuration under it.
  let lock: DirLock;
  try {
    lock = lockDirectory(config.dataDir);
  } catch (err) {
    if (!(err instanceof DirLockedError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 1;
  }
  const service = await startService(config, { logger }).catch((err: unknown) => {
    lock.release();
    throw err;
  });
  logger.info(
    {
      url: service.url,
      model: config.model,
      provider: config.provider.kind,
      workspace: config.workspaceRoot,
      dataDir: config.dataDir,
      auth: config.token ? "token" : "none",
    },
    "codex-agent-api listening",
  );
  // What `doctor` would find wrong with this host and configuration, once the service listens (in the background:
  // serving does not wait for it); nothing when all is well.
  void startUpChecks(config).then(
    (checks) => {
      const wrong = checks.filter((c) => c.status !== "ok");
      for (const c of wrong) {
        const entry = { check: c.name, detail: c.detail, ...(c.fix ? { fix: c.fix } : {}) };
        if (c.status === "error") logger.error(entry, `doctor: ${c.name}`);
        else logger.warn(entry, `doctor: ${c.name}`);
      }
      if (wrong.length)
        logger.warn(`doctor: ${wrong.length} check(s) not ok; \`codex-agent-api doctor\` tells more`);
      else logger.info({ checks: checks.length }, "doctor: start-up checks ok");
    },
    (err: unknown) => logger.warn({ err: String(err) }, "doctor: the start-up checks failed"),
  );
  const code = await new Promise<number>((resolve) => {
    const shutdown = (signal: NodeJS.Signals) => {
      logger.info({ signal }, "shutting down");
      service.stop().then(
        () => resolve(0),
        (err: unknown) => {
          logger.error({ err: String(err) }, "shutdown failed");
          resolve(1);
        },
      );
    };
    if (received) shutdown(received);
    else onSignal = shutdown;
  });
  lock.release();
  logger.info("stopped");
  return code;
}

async function main(args: string[]): Promise<number> {
  // `codex-agent-api --mock-model …` is `codex-agent-api serve --mock-model …`: options first mean serve.
  const argv = args[0]?.startsWith("-") && !["--help", "-h"].includes(args[0]) ? ["serve", ...args] : args;
  const [command, ...rest] = argv;
  if (!command || command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${usage()}\n${KEYS_USAGE}\n${DOCTOR_USAGE}`);
    return command ? 0 : 2;
  }
  try {
    if (command === "serve") return await serve(rest);
    if (command === "keys") return await keys(rest);
    if (command === "doctor") return await doctorCommand(rest);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof TypeError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
  process.stderr.write(`unknown command "${command}"\n\n${usage()}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
