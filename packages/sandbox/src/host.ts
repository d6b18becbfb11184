// What this host offers a container sandbox: podman and its runtime, cgroups, rootful or rootless, loop devices,
// user namespaces, rlimits, the image. `doctor()` reports it as data; the backend derives its podman arguments and
// its capabilities from the same facts.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statfsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { resolveCodexBinary } from "@codex-agent-api/codex";
import { runCommand, which } from "./exec.js";

const CGROUP2_MAGIC = 0x63677270;

export const IMAGE_STAMP_LABEL = "io.codex-agent-api.sandbox.stamp";
const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The image build script (bash; run as root). */
export const IMAGE_BUILD_SCRIPT = join(packageDir, "scripts", "build-image.sh");
/** The root-filesystem functions the build script sources (part of the image's content stamp). */
const ROOTFS_LIBRARY = join(packageDir, "scripts", "rootfs.sh");
const PACKAGE_LIST = join(packageDir, "image", "packages.txt");

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { version: string };
  return pkg.version;
}

/** The image the build script makes by default. */
export const DEFAULT_IMAGE = `localhost/codex-agent-sandbox:${packageVersion()}`;

export type CgroupVersion = "v1" | "hybrid" | "v2";

export interface HostReport {
  podman: { present: boolean; path: string | null; version: string | null; error?: string };
  runtimes: { runc: string | null; crun: string | null; podmanDefault: string | null };
  cgroup: { version: CgroupVersion; controllers: string[]; swapAccounting: boolean };
  rootful: boolean;
  uid: number;
  loop: { loopControl: boolean; usable: boolean };
  userNamespaces: { maxUserNamespaces: number | null; unprivilegedClone: boolean | null };
  ulimits: { nofileHard: number | null; nprocHard: number | null; pidMax: number | null };
  tools: { debootstrap: boolean; mkfsExt4: boolean; mount: boolean };
  image: {
    name: string;
    present: boolean;
    stamp: string | null;
    expectedStamp: string | null;
    current: boolean;
  };
  /** Global podman arguments a sandbox backend uses here. */
  podmanArgs: string[];
  /** What stops the container backend from working here (empty: nothing). */
  problems: string[];
  /** What works with reduced guarantees. */
  warnings: string[];
}

export function cgroupVersion(): CgroupVersion {
  try {
    if (statfsSync("/sys/fs/cgroup").type === CGROUP2_MAGIC) return "v2";
    if (existsSync("/sys/fs/cgroup/unified") && statfsSync("/sys/fs/cgroup/unified").type === CGROUP2_MAGIC) {
      return "hybrid";
    }
  } catch {}
  return "v1";
}

function cgroupControllers(version: CgroupVersion): string[] {
  try {
    if (version === "v2")
      return readFileSync("/sys/fs/cgroup/cgroup.controllers", "utf8").trim().split(/\s+/);
    // v1 / hybrid: the controllers mounted as v1 hierarchies (enabled in /proc/cgroups).
    return readFileSync("/proc/cgroups", "utf8")
      .split("\n")
      .filter((l) => l && !l.startsWith("#"))
      .map((l) => l.split(/\s+/))
      .filter((f) => f[3] === "1" && existsSync(`/sys/fs/cgroup/${f[0]}`))
      .map((f) => f[0]!);
  } catch {
    return [];
  }
}

function readNumber(path: string): number | null {
  try {
    const n = Number(readFileSync(path, "utf8").trim());
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

/** Hard limits of this process for `Max open files` and `Max processes`. */
export function hardLimits(): { nofile: number | null; nproc: number | null } {
  const out = { nofile: null as number | null, nproc: null as number | null };
  try {
    for (const line of readFileSync("/proc/self/limits", "utf8").split("\n")) {
      const m = /^Max (open files|processes)\s+\S+\s+(\S+)/.exec(line);
      if (!m) continue;
      const v = m[2] === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(m[2]);
      if (m[1] === "open files") out.nofile = v;
      else out.nproc = v;
    }
  } catch {}
  return out;
}

/**
 * rlimits for containers, at or below this host's hard limits (a root without CAP_SYS_RESOURCE cannot raise them, and
 * podman's defaults are above them on some hosts). podman caps RLIMIT_NPROC of its children at the kernel's pid_max,
 * so that is the ceiling too. NPROC counts the processes of one uid across all rootful containers, so it stays high:
 * the pids cgroup is the per-sandbox limit.
 */
export function containerUlimits(): { nofile: number; nproc: number } {
  const hard = hardLimits();
  const pidMax = readNumber("/proc/sys/kernel/pid_max") ?? 32768;
  return {
    nofile: Math.min(hard.nofile ?? 1024, 1 << 20),
    nproc: Math.min(hard.nproc ?? 4096, pidMax),
  };
}

/** Global podman arguments for this host: crun refuses hybrid/v1 cgroups, runc with cgroupfs works there. */
export function podmanArgsFor(version: CgroupVersion, runc: string | null): string[] {
  if (version === "v2") return [];
  return ["--runtime", runc ?? "runc", "--cgroup-manager", "cgroupfs"];
}

/** The engine's vendor directory (bin/codex, codex-resources/bwrap, codex-path/rg), mounted at /opt/codex. */
export function codexVendorDir(): string {
  return dirname(dirname(resolveCodexBinary()));
}

/** The content stamp the build script gives an image made from this package's scripts and package list. */
export async function expectedImageStamp(): Promise<string | null> {
  try {
    const script = await readFile(IMAGE_BUILD_SCRIPT);
    const library = await readFile(ROOTFS_LIBRARY);
    const list = await readFile(PACKAGE_LIST, "utf8");
    const names = [
      ...new Set(
        list
          .split("\n")
          .map((l) => l.replace(/#.*/, "").replace(/\s/g, ""))
          .filter(Boolean),
      ),
    ].sort();
    const arch = (await runCommand("dpkg", ["--print-architecture"])).stdout.trim();
    const suite = process.env.SANDBOX_IMAGE_SUITE ?? "bookworm";
    const hash = createHash("sha256")
      .update(script)
      .update(library)
      .update(`${names.join(",")}\n${suite}\n${arch}\n`);
    return hash.digest("hex").slice(0, 32);
  } catch {
    return null;
  }
}

/** The stamp label of an image, null when the image is absent ("" when it has none). */
export async function imageStamp(
  podman: string,
  globalArgs: readonly string[],
  image: string,
): Promise<string | null> {
  const res = await runCommand(podman, [
    ...globalArgs,
    "image",
    "inspect",
    "--format",
    `{{index .Labels "${IMAGE_STAMP_LABEL}"}}`,
    image,
  ]);
  if (res.code !== 0) return null;
  const out = res.stdout.trim();
  return out === "<no value>" ? "" : out;
}

interface PodmanInfo {
  host?: {
    ociRuntime?: { name?: string };
    cgroupManager?: string;
    cgroupVersion?: string;
    security?: { rootless?: boolean };
  };
  version?: { Version?: string };
}

export async function podmanInfo(podman: string, globalArgs: readonly string[]): Promise<PodmanInfo | null> {
  const res = await runCommand(podman, [...globalArgs, "info", "--format", "json"], { timeoutMs: 60_000 });
  if (res.code !== 0) return null;
  try {
    return JSON.parse(res.stdout) as PodmanInfo;
  } catch {
    return null;
  }
}

/** Host facts for the container backend, as structured data (the server's `doctor` prints them). */
export async function doctor(opts: { image?: string; podmanPath?: string } = {}): Promise<HostReport> {
  const problems: string[] = [];
  const warnings: string[] = [];
  const uid = process.getuid?.() ?? -1;
  const podmanPath = opts.podmanPath ?? (await which("podman"));
  const runc = await which("runc");
  const crun = await which("crun");
  const version = cgroupVersion();
  const controllers = cgroupControllers(version);
  const podmanArgs = podmanArgsFor(version, runc);
  const report: HostReport = {
    podman: { present: podmanPath !== null, path: podmanPath, version: null },
    runtimes: { runc, crun, podmanDefault: null },
    cgroup: {
      version,
      controllers,
      swapAccounting:
        version === "v2"
          ? controllers.includes("memory")
          : existsSync("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"),
    },
    rootful: uid === 0,
    uid,
    loop: {
      loopControl: existsSync("/dev/loop-control"),
      usable: uid === 0 && existsSync("/dev/loop-control"),
    },
    userNamespaces: {
      maxUserNamespaces: readNumber("/proc/sys/user/max_user_namespaces"),
      unprivilegedClone: existsSync("/proc/sys/kernel/unprivileged_userns_clone")
        ? readNumber("/proc/sys/kernel/unprivileged_userns_clone") === 1
        : null,
    },
    ulimits: {
      nofileHard: hardLimits().nofile,
      nprocHard: hardLimits().nproc,
      pidMax: readNumber("/proc/sys/kernel/pid_max"),
    },
    tools: {
      debootstrap: (await which("debootstrap")) !== null,
      mkfsExt4: (await which("mkfs.ext4")) !== null,
      mount: (await which("mount")) !== null,
    },
    image: {
      name: opts.image ?? DEFAULT_IMAGE,
      present: false,
      stamp: null,
      expectedStamp: null,
      current: false,
    },
    podmanArgs,
    problems,
    warnings,
  };
  if (!podmanPath) {
    problems.push("podman is not installed (Debian: apt-get install -y podman runc)");
  } else {
    const info = await podmanInfo(podmanPath, podmanArgs);
    if (!info) {
      report.podman.error = "podman info failed";
      problems.push("podman info failed: podman cannot run here");
    } else {
      report.podman.version = info.version?.Version ?? null;
      report.runtimes.podmanDefault = info.host?.ociRuntime?.name ?? null;
    }
    const stamp = await imageStamp(podmanPath, podmanArgs, report.image.name);
    report.image.present = stamp !== null;
    report.image.stamp = stamp || null;
    report.image.expectedStamp =
      opts.image && opts.image !== DEFAULT_IMAGE ? null : await expectedImageStamp();
    report.image.current =
      report.image.present &&
      (report.image.expectedStamp === null || report.image.stamp === report.image.expectedStamp);
    if (!report.image.present)
      problems.push(`image ${report.image.name} is missing: run ${IMAGE_BUILD_SCRIPT}`);
    else if (!report.image.current)
      warnings.push(`image ${report.image.name} is older than the build script: rebuild it`);
  }
  if (version !== "v2" && !runc)
    problems.push(`cgroups are ${version}: crun refuses them and runc is not installed`);
  for (const c of ["memory", "pids", "cpu"]) {
    if (!controllers.includes(c))
      warnings.push(`cgroup controller ${c} is not available: its limit is not enforced`);
  }
  if (!report.loop.usable)
    warnings.push("no loop devices (needs root and /dev/loop-control): disk limits are not enforced");
  if (uid !== 0)
    warnings.push("rootless: the workspace is a plain directory and the uid mapping is podman's keep-id");
  return report;
}
