/**
 * The doctor's report beyond its checks: what each sandbox backend guarantees on this host (from the facts the
 * checks gathered), and the report as lines for a terminal.
 */
export type CheckStatus = "ok" | "warning" | "error";

export interface Check {
  name: string;
  status: CheckStatus;
  /** What was found. */
  detail: string;
  /** What to do about a warning or an error. */
  fix?: string;
}

export interface DoctorReport {
  status: CheckStatus;
  checks: Check[];
  /** What each backend guarantees on this host. */
  backends: { local: Guarantee[]; container: Guarantee[] };
}

export interface Guarantee {
  /** e.g. "memory per session". */
  what: string;
  holds: boolean;
  how: string;
}

/** The sandbox package's host report (Podman, cgroups, loop devices, the image), loaded only here. */
export interface SandboxHost {
  podman: { present: boolean; path: string | null; version: string | null };
  runtimes: { runc: string | null; crun: string | null; podmanDefault: string | null };
  cgroup: { version: string; controllers: string[]; swapAccounting: boolean | null };
  rootful: boolean;
  loop: { loopControl: boolean; usable: boolean };
  userNamespaces: { maxUserNamespaces: number | null; unprivilegedClone: boolean | null };
  image: { name: string; present: boolean; current: boolean };
  problems: string[];
  warnings: string[];
}

/** What the local backend's limits can use here (the sandbox package's `TreeConfinement` report). */
export interface LocalConfinement {
  cgroup: string | null;
  controllers: string[];
  rlimits: boolean;
  problems: string[];
}

/** What each backend guarantees on this host. */
export function guarantees(
  host: SandboxHost | Error,
  confinement: LocalConfinement,
): DoctorReport["backends"] {
  const held = new Set(confinement.controllers);
  const group = (ctl: string) =>
    held.has(ctl)
      ? `cgroup ${confinement.cgroup} ${ctl}: the default size's, shared by the sessions of one engine`
      : (confinement.problems.find((p) => p.startsWith(`${ctl}:`)) ?? `no ${ctl} group here`);
  const local: Guarantee[] = [
    {
      what: "commands confined to their workspace",
      holds: true,
      how: "the engine's bubblewrap + seccomp profile",
    },
    { what: "no network unless the environment asks", holds: true, how: "the profile's network namespace" },
    {
      what: "turn timeout ends the command's process tree",
      holds: true,
      how: "the engine's process control",
    },
    { what: "memory per engine process group", holds: held.has("memory"), how: group("memory") },
    { what: "CPU per engine process group", holds: held.has("cpu"), how: group("cpu") },
    { what: "pids per engine process group", holds: held.has("pids"), how: group("pids") },
    {
      what: "memory and file size per process",
      holds: confinement.rlimits,
      how: confinement.rlimits
        ? "rlimits (data segment, file size) every command inherits"
        : "prlimit missing",
    },
    {
      what: "memory, CPU, pids per session",
      holds: false,
      how: "not per session on local (the sessions of one engine share its group): use the container backend",
    },
    {
      what: "disk per session",
      holds: false,
      how: "not on local (one file's size is capped, not the workspace's total)",
    },
    { what: "domain-restricted network", holds: false, how: "needs the container backend's egress proxy" },
  ];
  if (host instanceof Error || !host.podman.present) {
    return {
      local,
      container: [
        { what: "anything", holds: false, how: host instanceof Error ? host.message : "podman missing" },
      ],
    };
  }
  const cg = new Set(host.cgroup.controllers);
  const container: Guarantee[] = [
    {
      what: "own container per session (mount, pid, net namespaces)",
      holds: true,
      how: `podman ${host.rootful ? "rootful, uid 1000 inside" : "rootless"}`,
    },
    { what: "memory per session", holds: cg.has("memory"), how: `cgroup ${host.cgroup.version} memory` },
    { what: "CPU per session", holds: cg.has("cpu"), how: `cgroup ${host.cgroup.version} cpu` },
    { what: "pids per session", holds: cg.has("pids"), how: `cgroup ${host.cgroup.version} pids` },
    {
      what: "disk per session",
      holds: host.loop.usable,
      how: host.loop.usable ? "a loop-mounted ext4 image per workspace" : "no loop devices",
    },
    {
      what: "no network, or only the egress proxy",
      holds: true,
      how: "--network none; a unix socket to the service's proxy",
    },
    { what: "credentials never inside the sandbox", holds: true, how: "the egress proxy injects them" },
    { what: "a kernel of its own", holds: false, how: "containers share the host's kernel (not VMs)" },
  ];
  return { local, container };
}

/** The report as lines for a terminal. */
export function formatReport(r: DoctorReport): string {
  const mark: Record<CheckStatus, string> = { ok: "ok     ", warning: "warning", error: "ERROR  " };
  const lines = r.checks.map(
    (c) =>
      `${mark[c.status]} ${c.name}: ${c.detail}${c.fix && c.status !== "ok" ? `\n        → ${c.fix}` : ""}`,
  );
  for (const [name, list] of Object.entries(r.backends)) {
    lines.push("", `${name} backend on this host:`);
    for (const g of list) lines.push(`  ${g.holds ? "yes" : "no "}  ${g.what} (${g.how})`);
  }
  lines.push("", `overall: ${r.status}`);
  return `${lines.join("\n")}\n`;
}
