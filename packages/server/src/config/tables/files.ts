/** The Files API (`Config.files`): where uploaded files' contents live, and how large one may be. */
import { isAbsolute, relative } from "node:path";
import { ConfigError, table, value } from "../option.js";
import { int, text } from "../schemas.js";
import { dataDir, workspaceRoot } from "./storage.js";

/** Where the contents live (`<dir>/<project>/<file id>`); shared by every instance of a cluster. */
const dir = value({
  flag: "file-dir",
  arg: "<dir>",
  env: "AGENT_FILE_DIR",
  schema: text,
  default: (get) => `${get(dataDir)}/files`,
  blank: "unset",
  path: true,
  help: [
    "where Files API uploads are kept (AGENT_FILE_DIR, default <data-dir>/files); instances",
    "sharing a database need it on shared storage, like the workspace",
  ],
});

/** Whether `inner` is `outer` or inside it (paths as written). */
export const within = (outer: string, inner: string) => {
  const r = relative(outer, inner);
  return r === "" || (!r.startsWith("..") && !isAbsolute(r));
};

export const files = table(
  "files",
  {
    dir,
    /** The largest upload (bytes): 413 beyond. */
    maxBytes: value({
      flag: "file-size-limit",
      arg: "<bytes>",
      env: "AGENT_FILE_SIZE_LIMIT",
      schema: int({ min: 1 }),
      default: 512 * 1024 * 1024,
      help: "largest Files API upload, 413 beyond (AGENT_FILE_SIZE_LIMIT, default 536870912: 512 MiB)",
    }),
  },
  [
    // The directory and the workspace root may not hold one another: agents work in the workspace, and must not see
    // any project's uploads.
    (get) => {
      const files = get(dir);
      const workspace = get(workspaceRoot);
      if (within(workspace, files) || within(files, workspace)) {
        throw new ConfigError(
          `--file-dir (${files}) and the workspace root (${workspace}) cannot hold one another: agents would see ` +
            "uploaded files",
        );
      }
    },
  ],
);
