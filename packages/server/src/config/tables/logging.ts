/** Logs. */
import { table, value } from "../option.js";
import { text } from "../schemas.js";

export const logging = table(null, {
  logLevel: value({
    flag: "log-level",
    arg: "<level>",
    env: "LOG_LEVEL",
    schema: text,
    default: "info",
    blank: "value",
    help: "pino level (LOG_LEVEL, default info)",
  }),
});
