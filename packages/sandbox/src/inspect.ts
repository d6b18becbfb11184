// What podman knows of a sandbox's container: whether it exists, its state, how it ended, and its cgroup (where the
// limit counters are read). One `podman inspect`; a container that is gone reads as null.
import type { Podman } from "./podman.js";

export interface ContainerState {
  status: string;
  exitCode: number | null;
  oomKilled: boolean;
  cgroupPath: string;
}

export async function inspectContainer(podman: Podman, name: string): Promise<ContainerState | null> {
  const r = await podman.tryRun([
    "inspect",
    "--type",
    "container",
    "--format",
    "{{.State.Status}}|{{.State.ExitCode}}|{{.State.OOMKilled}}|{{.State.CgroupPath}}",
    name,
  ]);
  if (!r.ok) return null;
  const [status = "", code, oom, cg = ""] = r.out.trim().split("|");
  return {
    status,
    exitCode: code === undefined ? null : Number(code),
    oomKilled: oom === "true",
    cgroupPath: cg,
  };
}
