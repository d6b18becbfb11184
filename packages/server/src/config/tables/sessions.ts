/** Sessions and their turns. */
import { table, value } from "../option.js";
import { int } from "../schemas.js";

// These three name their variable in errors, not their flag (as they always did).
export const sessions = table(null, {
  maxSessions: value({
    flag: "max-sessions",
    arg: "<n>",
    env: "AGENT_MAX_SESSIONS",
    label: "AGENT_MAX_SESSIONS",
    schema: int({ min: 1 }),
    default: 1000,
    help: "stored sessions cap, 429 beyond (AGENT_MAX_SESSIONS, default 1000)",
  }),
  /** Idle sessions older than this are deleted; 0 = never. */
  sessionTtlSeconds: value({
    flag: "session-ttl",
    arg: "<seconds>",
    env: "AGENT_SESSION_TTL",
    label: "AGENT_SESSION_TTL",
    schema: int({ min: 0 }),
    default: 0,
    help: "delete sessions idle this long, 0 = never (AGENT_SESSION_TTL, default 0)",
  }),
  turnTimeoutSeconds: value({
    flag: "turn-timeout",
    arg: "<seconds>",
    env: "AGENT_TURN_TIMEOUT",
    label: "AGENT_TURN_TIMEOUT",
    schema: int({ min: 1 }),
    default: 300,
    help: "per-turn timeout (AGENT_TURN_TIMEOUT, default 300)",
  }),
});
