/**
 * Where agents' commands run (`Config.sandboxes`): the backend (`local`: the engine's sandbox on this host;
 * `container`: a Podman container per session), the container image and warm pool, the limits a session's
 * `container_size` maps to and the operator's maximums, and what the egress proxy may reach beyond public hosts.
 */
import { list, table, value } from "../option.js";
import { cidr, hostAddress, int, oneOf, text } from "../schemas.js";
import { dataDir } from "./storage.js";

const MiB = 1024 * 1024;

export const sandboxes = table("sandboxes", {
  backend: value({
    flag: "sandbox-backend",
    arg: "<backend>",
    env: "AGENT_SANDBOX_BACKEND",
    schema: oneOf(["local", "container"] as const, "local or container"),
    default: "local",
    help: [
      "where agents' commands run: local (the engine's sandbox on this host) | container (a",
      "Podman container per session) (AGENT_SANDBOX_BACKEND, default local)",
    ],
  }),
  /** The container image (default: the one `packages/sandbox/scripts/build-image.sh` builds). */
  image: value({
    flag: "sandbox-image",
    arg: "<name>",
    env: "AGENT_SANDBOX_IMAGE",
    schema: text,
    default: undefined,
    blank: "unset",
    help: "container image (AGENT_SANDBOX_IMAGE, default localhost/codex-agent-sandbox:<version>)",
  }),
  /** Where sandboxes' state lives: workspace volumes, their containers' records, the egress proxy's CA. */
  dir: value({
    flag: "sandbox-dir",
    arg: "<dir>",
    env: "AGENT_SANDBOX_DIR",
    schema: text,
    default: (get) => `${get(dataDir)}/sandboxes`,
    blank: "unset",
    path: true,
    help: "container sandboxes' state (AGENT_SANDBOX_DIR, default <data-dir>/sandboxes)",
  }),
  warm: value({
    flag: "sandbox-warm",
    arg: "<n>",
    env: "AGENT_SANDBOX_WARM",
    schema: int({ max: 100 }),
    default: 0,
    help: "containers of the default size kept started for new sessions (AGENT_SANDBOX_WARM, default 0)",
  }),
  idleStopSeconds: value({
    flag: "sandbox-idle-stop",
    arg: "<s>",
    env: "AGENT_SANDBOX_IDLE_STOP",
    schema: int(),
    default: 600,
    help: "stop a session's container after this long idle; 0 never (AGENT_SANDBOX_IDLE_STOP, default 600)",
  }),
  /** A session without a `container_size` gets this one. */
  defaultSize: value({
    flag: "sandbox-size",
    arg: "<size>",
    env: "AGENT_SANDBOX_SIZE",
    schema: oneOf(["small", "medium", "large"] as const, "small, medium or large"),
    default: "medium",
    help: "size of a session without container_size (AGENT_SANDBOX_SIZE, default medium: 2 CPUs, 4 GiB)",
  }),
  maxCpus: value({
    flag: "sandbox-max-cpus",
    arg: "<n>",
    env: "AGENT_SANDBOX_MAX_CPUS",
    schema: int({ min: 1, max: 256 }),
    default: undefined,
    help: "the most CPUs a session's container (local: an engine's group) gets (AGENT_SANDBOX_MAX_CPUS)",
  }),
  maxMemoryBytes: value({
    flag: "sandbox-max-memory",
    arg: "<MiB>",
    env: "AGENT_SANDBOX_MAX_MEMORY",
    schema: int({ min: 64, times: MiB }),
    default: undefined,
    help: "the most memory a container (local: an engine's group) gets, MiB (AGENT_SANDBOX_MAX_MEMORY)",
  }),
  pids: value({
    flag: "sandbox-pids",
    arg: "<n>",
    env: "AGENT_SANDBOX_PIDS",
    schema: int({ min: 16 }),
    default: 1024,
    help: "processes per container (local: per engine's group) (AGENT_SANDBOX_PIDS, default 1024)",
  }),
  diskBytes: value({
    flag: "sandbox-disk",
    arg: "<MiB>",
    env: "AGENT_SANDBOX_DISK",
    schema: int({ min: 16, times: MiB }),
    default: 10 * 1024 * MiB,
    help: "workspace per container (local: largest file), MiB (AGENT_SANDBOX_DISK, default 10240)",
  }),
  egressAllowPrivate: list({
    flag: "egress-allow-private",
    arg: "<cidr>",
    env: "AGENT_EGRESS_ALLOW_PRIVATE",
    schema: cidr.array(),
    default: [],
    help: [
      "a private range sandboxes' networks may reach (an internal mirror), repeatable",
      "(AGENT_EGRESS_ALLOW_PRIVATE, comma-separated; default: public addresses only)",
    ],
  }),
  egressHosts: list({
    flag: "egress-host",
    arg: "<name=addr>",
    env: "AGENT_EGRESS_HOSTS",
    schema: hostAddress.array().transform((pairs) => Object.fromEntries(pairs)),
    default: {},
    help: "a name the egress proxy resolves to this address, repeatable (AGENT_EGRESS_HOSTS)",
  }),
});
