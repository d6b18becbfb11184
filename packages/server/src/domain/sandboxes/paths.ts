/** What a sandboxed session's commands see (the container backend): where its workspace is, the PATH they start with. */

/** The workspace, inside its container. */
export const SANDBOX_CWD = "/workspace";

/** The sandbox image's search path (an environment's package directories go first). */
export const CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
