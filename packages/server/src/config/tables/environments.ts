/** Environments (`Config.environments`): self-hosted directories, setup commands and package installs. */
import { list, table, toggle, value } from "../option.js";
import { int, onOff, text, url } from "../schemas.js";
import { workspaceRoot } from "./storage.js";

export const environments = table("environments", {
  /** Directories a `self_hosted` environment's `workspace_directory` may be in (default: the workspace root). */
  selfHostedRoots: list({
    flag: "self-hosted-root",
    arg: "<dir>",
    env: "AGENT_SELF_HOSTED_ROOTS",
    schema: text.array(),
    default: (get) => [get(workspaceRoot)],
    path: true,
    help: [
      "a directory self_hosted environments may use (workspace_directory inside it), repeatable",
      "(AGENT_SELF_HOSTED_ROOTS, comma-separated; default the workspace root)",
    ],
  }),
  /** The longest a setup command (or a package install) may run (seconds). */
  setupTimeoutSeconds: value({
    flag: "environment-setup-timeout",
    arg: "<seconds>",
    env: "AGENT_ENVIRONMENT_SETUP_TIMEOUT",
    schema: int({ min: 1, max: 86_400 }),
    default: 600,
    help: [
      "longest a setup command or package install of an environment may run",
      "(AGENT_ENVIRONMENT_SETUP_TIMEOUT, default 600)",
    ],
  }),
  /** Whether setup commands and package installs have the network (the agent's own policy applies after them). */
  setupNetwork: value({
    flag: "environment-setup-network",
    arg: "<on|off>",
    env: "AGENT_ENVIRONMENT_SETUP_NETWORK",
    schema: onOff,
    default: true,
    blank: "value",
    help: [
      "whether setup commands and package installs have the network",
      "(AGENT_ENVIRONMENT_SETUP_NETWORK, default on)",
    ],
  }),
  /** The npm registry and pip index package installs use (null: the machine's configuration). */
  npmRegistry: value({
    flag: "environment-npm-registry",
    arg: "<url>",
    env: "AGENT_ENVIRONMENT_NPM_REGISTRY",
    schema: url,
    default: null,
    help: [
      "npm registry of package installs (AGENT_ENVIRONMENT_NPM_REGISTRY, default the",
      "machine's npm configuration)",
    ],
  }),
  pipIndexUrl: value({
    flag: "environment-pip-index-url",
    arg: "<url>",
    env: "AGENT_ENVIRONMENT_PIP_INDEX_URL",
    schema: url,
    default: null,
    help: "pip index of package installs (AGENT_ENVIRONMENT_PIP_INDEX_URL, default pip's)",
  }),
  /** The Python that makes an environment's virtualenv. */
  python: value({
    flag: "environment-python",
    arg: "<cmd>",
    env: "AGENT_ENVIRONMENT_PYTHON",
    schema: text,
    default: "python3",
    blank: "unset",
    help: "the Python making environments' virtualenvs (AGENT_ENVIRONMENT_PYTHON, default python3)",
  }),
  /**
   * An operator's program installing `packages.system` (run outside the agent's sandbox, with the package names as
   * arguments); null: system packages are refused.
   */
  systemInstaller: value({
    flag: "environment-system-installer",
    arg: "<program>",
    env: "AGENT_ENVIRONMENT_SYSTEM_INSTALLER",
    schema: text,
    default: null,
    blank: "unset",
    path: true,
    help: [
      "installs packages.system: run OUTSIDE the agent's sandbox with the package names as",
      "arguments (AGENT_ENVIRONMENT_SYSTEM_INSTALLER; default none: system packages refused)",
    ],
  }),
  /** Whether `environment_variable` vault credentials are given to the agent's commands (their value in `env`). */
  allowEnvCredentials: toggle({
    flag: "allow-env-credentials",
    env: "AGENT_ALLOW_ENV_CREDENTIALS",
    help: [
      "give environment_variable vault credentials to the agent's commands as variables",
      "(AGENT_ALLOW_ENV_CREDENTIALS=1; default off: such credentials are refused)",
    ],
  }),
});
