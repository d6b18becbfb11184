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
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, "shutting down");
      service.stop().then(resolve, (err: unknown) => {
        logger.error({ err: String(err) }, "shutdown failed");
        resolve();
      });
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
  });
  logger.info("stopped");
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
