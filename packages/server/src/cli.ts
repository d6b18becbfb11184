#!/usr/bin/env node
import { ConfigError, loadConfig, usage } from "./config.js";
import { createLogger, startService } from "./service.js";

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(usage());
    return command ? 0 : 2;
  }
  if (command !== "serve") {
    process.stderr.write(`unknown command "${command}"\n\n${usage()}`);
    return 2;
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(rest);
  } catch (err) {
    process.stderr.write(
      `${err instanceof ConfigError || err instanceof TypeError ? err.message : String(err)}\n`,
    );
    return 2;
  }
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
  const service = await startService(config, logger);
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
  if (config.provider.kind !== "mock" && !config.provider.apiKey) {
    logger.warn("OPENAI_API_KEY is not set: turns will fail until it is (or start with --mock-model)");
  }
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
  logger.info("stopped");
  return code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
