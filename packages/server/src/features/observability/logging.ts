/**
 * Logs for people and for machines: readable, coloured lines (pino-pretty) when stdout is a terminal, one JSON
 * object per line otherwise (log collectors). `LOG_FORMAT=json|pretty` forces either.
 */
import { createRequire } from "node:module";
import pino, { type DestinationStream, type Logger } from "pino";

const require = createRequire(import.meta.url);

export type LogFormat = "json" | "pretty";

export const LOG_FORMATS: readonly LogFormat[] = ["json", "pretty"];

/** Which format: `LOG_FORMAT` if set, else pretty on a terminal and JSON otherwise. */
export function logFormat(out: { isTTY?: boolean }, env: Record<string, string | undefined>): LogFormat {
  const forced = env.LOG_FORMAT?.trim().toLowerCase();
  if (forced) {
    if (forced === "json" || forced === "pretty") return forced;
    throw new TypeError(
      `LOG_FORMAT must be json or pretty (unset: pretty on a terminal, JSON otherwise), got "${env.LOG_FORMAT}"`,
    );
  }
  return out.isTTY ? "pretty" : "json";
}

export interface LoggerOptions {
  /** Default: chosen by {@link logFormat} for stdout. */
  format?: LogFormat;
  /** Default: stdout. */
  destination?: NodeJS.WritableStream;
  env?: Record<string, string | undefined>;
}

export function createLogger(level: string, opts: LoggerOptions = {}): Logger {
  const out = opts.destination ?? process.stdout;
  const format = opts.format ?? logFormat(out as { isTTY?: boolean }, opts.env ?? process.env);
  const options = { level, base: { service: "codex-agent-api" } };
  if (format === "json") {
    return opts.destination ? pino(options, opts.destination as DestinationStream) : pino(options);
  }
  // Loaded only for pretty lines (a service logging JSON starts without it).
  const PinoPretty = require("pino-pretty") as typeof import("pino-pretty");
  const pretty = PinoPretty({
    destination: out,
    sync: true,
    colorize: PinoPretty.isColorSupported && (out as { isTTY?: boolean }).isTTY === true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service",
    singleLine: true,
  });
  return pino(options, pretty);
}
