/**
 * Repositories environments start from (`Config.repositories`): where the service keeps its mirrors and each
 * session's private record of a repository, how large and how slow a fetch may be, and whether a repository may be
 * a path on this machine.
 */
import { ConfigError, table, toggle, value } from "../option.js";
import { int, text } from "../schemas.js";
import { within } from "./files.js";
import { dataDir, workspaceRoot } from "./storage.js";

const dir = value({
  flag: "repository-dir",
  arg: "<dir>",
  env: "AGENT_REPOSITORY_DIR",
  schema: text,
  default: (get) => `${get(dataDir)}/repositories`,
  blank: "value",
  path: true,
  help: [
    "where repository mirrors and sessions' private repository records are kept",
    "(AGENT_REPOSITORY_DIR, default <data-dir>/repositories); outside the workspace root;",
    "instances sharing a database need it on shared storage, like the workspace",
  ],
});

export const repositories = table(
  "repositories",
  {
    dir,
    /** The most one repository's mirror may hold on disk (bytes): a fetch that grows it beyond is stopped. */
    maxBytes: value({
      flag: "repository-max-size",
      arg: "<bytes>",
      env: "AGENT_REPOSITORY_MAX_SIZE",
      schema: int({ min: 1 }),
      default: 2 * 1024 * 1024 * 1024,
      help: "largest repository fetched, stopped beyond (AGENT_REPOSITORY_MAX_SIZE, default 2 GiB)",
    }),
    /** What all mirrors together may hold: the least recently used, of no live environment, are removed beyond. */
    mirrorsMaxBytes: value({
      flag: "repository-mirrors-max-size",
      arg: "<bytes>",
      env: "AGENT_REPOSITORY_MIRRORS_MAX_SIZE",
      schema: int({ min: 1 }),
      default: 20 * 1024 * 1024 * 1024,
      help: [
        "disk all repository mirrors may use; the least recently used that no environment",
        "needs are removed beyond (AGENT_REPOSITORY_MIRRORS_MAX_SIZE, default 20 GiB)",
      ],
    }),
    /** How long one fetch or push may take (seconds). */
    timeoutSeconds: value({
      flag: "repository-timeout",
      arg: "<seconds>",
      env: "AGENT_REPOSITORY_TIMEOUT",
      schema: int({ min: 1 }),
      default: 600,
      help: "longest fetch or push of a repository (AGENT_REPOSITORY_TIMEOUT, default 600 s)",
    }),
    /** Ready-made clones kept for the next session asking for the same repository and commit (0: none). */
    spares: value({
      flag: "repository-spares",
      arg: "<n>",
      env: "AGENT_REPOSITORY_SPARES",
      schema: int({ min: 0 }),
      default: 2,
      help: [
        "ready-made workspace clones kept for the next session of the same repository and commit",
        "(local sandbox backend; AGENT_REPOSITORY_SPARES, default 2, 0 = none)",
      ],
    }),
    /** Whether a repository may be a path on this machine (tests, an operator's own mirrors). */
    allowLocal: toggle({
      flag: "allow-local-repositories",
      env: "AGENT_ALLOW_LOCAL_REPOSITORIES",
      help: [
        "let environments' repositories be paths on this machine (file:// or absolute);",
        "any client could read any repository the service can (AGENT_ALLOW_LOCAL_REPOSITORIES=1)",
      ],
    }),
  },
  [
    (get) => {
      const d = get(dir);
      const workspace = get(workspaceRoot);
      if (within(workspace, d) || within(d, workspace)) {
        throw new ConfigError(
          `--repository-dir (${d}) and the workspace root (${workspace}) cannot hold one another: agents would ` +
            "see other sessions' repositories and their credentials' use",
        );
      }
    },
  ],
);
