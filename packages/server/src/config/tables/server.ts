/** The HTTP listener. */
import { table, value } from "../option.js";
import { int, text } from "../schemas.js";

/** The bind address (other tables read it: loopback binds get other defaults). */
export const host = value({
  flag: "host",
  arg: "<addr>",
  env: "HOST",
  schema: text,
  default: "127.0.0.1",
  blank: "value",
  help: "bind address (HOST, default 127.0.0.1)",
});

export const server = table(null, {
  host,
  port: value({
    flag: "port",
    arg: "<n>",
    env: "PORT",
    schema: int({ min: 0, max: 65535 }),
    default: 9000,
    help: "port (PORT, default 9000)",
  }),
  bodyLimitBytes: value({ env: "AGENT_BODY_LIMIT", schema: int({ min: 1024 }), default: 10 * 1024 * 1024 }),
  /** How often an idle SSE stream gets a keep-alive comment. */
  sseKeepaliveMs: value({ env: "AGENT_SSE_KEEPALIVE_MS", schema: int({ min: 10 }), default: 15_000 }),
});
