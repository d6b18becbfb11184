/** Where state lives: the data directory, the database, the workspaces. */
import { table, value } from "../option.js";
import { int, oneOf, postgresUrl, text } from "../schemas.js";

/** Holds the SQLite database (unless `databaseUrl`) and the engine's CODEX_HOME. */
export const dataDir = value({
  flag: "data-dir",
  arg: "<dir>",
  env: "AGENT_DATA_DIR",
  schema: text,
  default: ".data",
  blank: "value",
  path: true,
  help: "database + engine state (AGENT_DATA_DIR, default ./.data)",
});

/** Root of the session workspaces (the agent's cwd). */
export const workspaceRoot = value({
  flag: "workspace",
  arg: "<dir>",
  env: "WORKSPACE",
  schema: text,
  default: (get) => `${get(dataDir)}/workspace`,
  blank: "value",
  path: true,
  help: "workspace root, the agents' cwd (WORKSPACE, default <data-dir>/workspace)",
});

/**
 * A PostgreSQL database (postgres://…) instead of the embedded SQLite one: several instances may share it (each
 * with its own data dir, the same workspace root on shared storage).
 */
export const databaseUrl = value({
  flag: "database-url",
  arg: "<url>",
  env: "DATABASE_URL",
  schema: postgresUrl,
  default: null,
  help: [
    "PostgreSQL instead of the embedded SQLite database; several instances may share it",
    "(DATABASE_URL, e.g. postgres://user@host/db)",
  ],
});

export const storage = table(null, {
  dataDir,
  databaseUrl,
  workspaceRoot,
  /**
   * Where sessions work unless they say: `auto` = the official dialect gives each session its own directory, the
   * template dialect shares the root (its contract); `session` / `shared` = that for both.
   */
  workspaceMode: value({
    flag: "workspace-mode",
    arg: "<mode>",
    env: "AGENT_WORKSPACE_MODE",
    schema: oneOf(["auto", "shared", "session"], "auto, session or shared"),
    default: "auto",
    blank: "value",
    help: [
      "auto | session | shared (AGENT_WORKSPACE_MODE, default auto: a directory per",
      "session in the official dialect, the shared root in the template dialect)",
    ],
  }),
  /**
   * With several instances: an instance whose heartbeat is older than this is dead and its running turns are taken
   * over; an instance that cannot heartbeat for about half of it fences itself (stops its engines).
   */
  clusterDeadAfterSeconds: value({
    env: "AGENT_CLUSTER_DEAD_AFTER",
    schema: int({ min: 3, max: 600 }),
    default: 7,
  }),
});
