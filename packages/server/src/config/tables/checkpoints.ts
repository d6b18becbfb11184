/** Workspace checkpoints (`Config.checkpoints`): a shadow git store per workspace directory, outside it. */
import { DEFAULT_EXCLUDES, DEFAULT_MAX_FILE_BYTES } from "../checkpoint-defaults.js";
import { computed, list, table, toggle, value } from "../option.js";
import { gitignorePattern, int, oneOf, onOff, text } from "../schemas.js";
import { databaseUrl, dataDir } from "./storage.js";

const extraExcludes = list({
  flag: "checkpoint-exclude",
  arg: "<pattern>",
  env: "AGENT_CHECKPOINT_EXCLUDE",
  schema: gitignorePattern.array(),
  default: [],
  input: true,
  help: [
    "gitignore pattern left out of checkpoints besides .gitignore and the defaults",
    "(node_modules/, .venv/, dist/, build/, target/, …), repeatable",
    "(AGENT_CHECKPOINT_EXCLUDE, comma-separated)",
  ],
});
const noDefaultExcludes = toggle({
  flag: "checkpoint-no-default-excludes",
  env: "AGENT_CHECKPOINT_DEFAULT_EXCLUDES",
  envOn: "0",
  input: true,
  help: "do not leave out the default directories (AGENT_CHECKPOINT_DEFAULT_EXCLUDES=0)",
});

export const checkpoints = table("checkpoints", {
  enabled: value({
    flag: "checkpoints",
    arg: "<on|off>",
    env: "AGENT_CHECKPOINTS",
    schema: onOff,
    default: true,
    blank: "value",
    help: "workspace checkpoints per turn (AGENT_CHECKPOINTS, default on)",
  }),
  /** Where the stores live (one directory per workspace directory). */
  dir: value({
    flag: "checkpoint-dir",
    arg: "<dir>",
    env: "AGENT_CHECKPOINT_DIR",
    schema: text,
    default: (get) => `${get(dataDir)}/checkpoints`,
    blank: "value",
    path: true,
    help: "where checkpoint stores live (AGENT_CHECKPOINT_DIR, default <data-dir>/checkpoints)",
  }),
  /** Files larger than this are left out of checkpoints (and listed as such). */
  maxFileBytes: value({
    flag: "checkpoint-max-file-size",
    arg: "<bytes>",
    env: "AGENT_CHECKPOINT_MAX_FILE_SIZE",
    schema: int({ min: 0 }),
    default: DEFAULT_MAX_FILE_BYTES,
    help: [
      "files larger than this are left out of checkpoints and listed",
      "(AGENT_CHECKPOINT_MAX_FILE_SIZE, default 10485760)",
    ],
  }),
  extraExcludes,
  noDefaultExcludes,
  /** Gitignore-syntax patterns left out of every checkpoint, on top of the workspaces' own .gitignore files. */
  exclude: computed((get): string[] => [
    ...(get(noDefaultExcludes) ? [] : DEFAULT_EXCLUDES),
    ...get(extraExcludes),
  ]),
  /**
   * Whether a large workspace is watched between scans (inotify), so that a turn's checkpoint lists only what
   * changed; off for a workspace other machines write to (a network filesystem). Default: on, but off with a
   * PostgreSQL database (instances that share one may share the workspace over the network).
   */
  watch: value({
    flag: "checkpoint-watch",
    arg: "<on|off>",
    env: "AGENT_CHECKPOINT_WATCH",
    schema: onOff,
    default: (get) => get(databaseUrl) === null,
    blank: "value",
    help: [
      "watch large workspaces between checkpoints, so a turn's checkpoint lists only what changed;",
      "off for a workspace other machines write to (AGENT_CHECKPOINT_WATCH, default on; off with",
      "--database-url: instances may share the workspace over the network)",
    ],
  }),
  /** Checkpoints kept per store (the newest; 0 = no limit). */
  keep: value({
    flag: "checkpoint-keep",
    arg: "<n>",
    env: "AGENT_CHECKPOINT_KEEP",
    schema: int({ min: 0 }),
    default: 100,
    help: "checkpoints kept per workspace, 0 = all (AGENT_CHECKPOINT_KEEP, default 100)",
  }),
  /** Checkpoints older than this are dropped (seconds; 0 = never). */
  maxAgeSeconds: value({
    flag: "checkpoint-max-age",
    arg: "<seconds>",
    env: "AGENT_CHECKPOINT_MAX_AGE",
    schema: int({ min: 0 }),
    default: 30 * 86_400,
    help: [
      "drop checkpoints older than this, 0 = never (AGENT_CHECKPOINT_MAX_AGE, default",
      "2592000: 30 days)",
    ],
  }),
  /** The largest patch a diff returns (larger ones are cut and marked truncated). */
  maxPatchBytes: value({
    flag: "checkpoint-max-patch",
    arg: "<bytes>",
    env: "AGENT_CHECKPOINT_MAX_PATCH",
    schema: int({ min: 1024 }),
    default: 1024 * 1024,
    help: "largest patch a diff returns (AGENT_CHECKPOINT_MAX_PATCH, default 1048576)",
  }),
  /** A store idle this long is pruned (retention) and repacked (seconds). */
  idleSeconds: value({
    flag: "checkpoint-idle",
    arg: "<seconds>",
    env: "AGENT_CHECKPOINT_IDLE",
    schema: int({ min: 0, max: 86_400 }),
    default: 30,
    help: "prune and repack a store idle this long (AGENT_CHECKPOINT_IDLE, default 30)",
  }),
  /**
   * Whether official-dialect streams carry `agent.session.checkpoint.created` (an event the official SDKs' types do
   * not know: strict clients reject it); template streams always do.
   */
  officialEvents: value({
    flag: "checkpoint-events",
    arg: "<who>",
    env: "AGENT_CHECKPOINT_EVENTS",
    schema: oneOf(["template", "all"], "template or all").transform((who) => who === "all"),
    default: false,
    blank: "value",
    help: [
      "template | all: which dialects' streams carry agent.session.checkpoint.created",
      "(AGENT_CHECKPOINT_EVENTS, default template: the official SDKs do not know it)",
    ],
  }),
});
