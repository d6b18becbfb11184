// What the container backend learns about the host before it starts: podman and its runtime, the cgroup
// controllers, whether workspaces can be loop-mounted images, the limits it can enforce (the capabilities), and the
// context every sandbox of the backend shares. Refuses a host that cannot run the sandboxes (no podman, no image).
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, realpath } from "node:fs/promises";
import { resolve } from "node:path";
import { SandboxError } from "./errors.js";
import { which } from "./exec.js";
import {
  cgroupVersion,
  codexVendorDir,
  containerUlimits,
  DEFAULT_IMAGE,
  imageStamp,
  podmanArgsFor,
  podmanInfo,
} from "./host.js";
import { Podman } from "./podman.js";
import type { SandboxContext } from "./sandbox.js";
import type { Capabilities } from "./types.js";

/** The options of the host and of every sandbox's context (part of `ContainerBackendOptions`). */
export interface HostOptions {
  /** State directory: one sub-directory per sandbox (workspace image and mount, egress and trust directories). */
  rootDir: string;
  /** Default image (default: the build script's `localhost/codex-agent-sandbox:<version>`). */
  image?: string;
  /** uid and gid commands run as inside the container (default 1000:1000, the image's `agent`). */
  uid?: number;
  gid?: number;
  /** Home of that user inside (a tmpfs; default /home/agent). */
  home?: string;
  /** The engine's vendor directory (default: from the installed @openai/codex). */
  vendorDir?: string;
  podmanPath?: string;
  /** `podman stop` timeout (default 2 s). */
  stopTimeoutSec?: number;
}

export interface HostProbe {
  ctx: SandboxContext;
  caps: Capabilities;
  /** The state directory, made (mode 0700) and resolved. */
  rootDir: string;
  /** The default image (present). */
  image: string;
  /** Whether workspaces are loop-mounted images (root with /dev/loop-control) rather than plain directories. */
  loop: boolean;
}

export async function probeHost(options: HostOptions): Promise<HostProbe> {
  const podmanPath = options.podmanPath ?? (await which("podman"));
  if (!podmanPath)
    throw new SandboxError("unavailable", "podman is not installed (Debian: apt-get install -y podman runc)");
  const version = cgroupVersion();
  const runc = await which("runc");
  const podmanArgs = podmanArgsFor(version, runc);
  const info = await podmanInfo(podmanPath, podmanArgs);
  if (!info) throw new SandboxError("unavailable", "podman info failed: podman cannot run containers here");
  const uid = options.uid ?? 1000;
  const gid = options.gid ?? 1000;
  const rootless = info.host?.security?.rootless ?? process.getuid?.() !== 0;
  const loop = !rootless && process.getuid?.() === 0 && existsSync("/dev/loop-control");
  const ulimits = containerUlimits();
  const image = options.image ?? DEFAULT_IMAGE;
  await mkdir(options.rootDir, { recursive: true, mode: 0o700 });
  const rootDir = await realpath(resolve(options.rootDir));
  const controllers = new Set(
    version === "v2" ? [] : ["memory", "pids", "cpu"].filter((c) => existsSync(`/sys/fs/cgroup/${c}`)),
  );
  const has = (c: string) => version === "v2" || controllers.has(c);
  const caps: Capabilities = {
    kind: "container",
    runtime: {
      podman: info.version?.Version ?? "unknown",
      ociRuntime: podmanArgs[1] ?? info.host?.ociRuntime?.name ?? "unknown",
      cgroupManager: podmanArgs[3] ?? info.host?.cgroupManager ?? "unknown",
      cgroupVersion: version,
      rootless,
      podmanArgs,
    },
    limits: {
      memory: has("memory")
        ? { enforced: true, detail: `cgroup ${version} memory controller (--memory, --memory-swap)` }
        : { enforced: false, detail: "no memory cgroup controller" },
      cpu: has("cpu")
        ? { enforced: true, detail: `cgroup ${version} CFS quota (--cpus)` }
        : { enforced: false, detail: "no cpu cgroup controller" },
      pids: has("pids")
        ? { enforced: true, detail: `cgroup ${version} pids controller (--pids-limit)` }
        : { enforced: false, detail: "no pids cgroup controller" },
      disk: loop
        ? { enforced: true, detail: "a sparse ext4 image per workspace, loop-mounted nodev,nosuid" }
        : {
            enforced: false,
            detail: "loop mounts need root and /dev/loop-control: the workspace is a plain directory",
          },
      tmp: {
        enforced: true,
        detail: "sized tmpfs for /tmp and the home directory; the root file system is read-only",
      },
      network: {
        enforced: true,
        detail: "--network none (only lo); proxy mode adds only a unix socket bridge",
      },
    },
    user: `${uid}:${gid}`,
    ulimits,
  };
  const rootLabel = createHash("sha256").update(rootDir).digest("hex").slice(0, 16);
  const ctx: SandboxContext = {
    podman: new Podman(podmanPath, podmanArgs),
    cgroupVersion: version,
    stopTimeoutSec: options.stopTimeoutSec ?? 2,
    systemCaBundle: existsSync("/etc/ssl/certs/ca-certificates.crt")
      ? "/etc/ssl/certs/ca-certificates.crt"
      : null,
    uid,
    gid,
    home: options.home ?? "/home/agent",
    vendorDir: options.vendorDir ?? codexVendorDir(),
    ulimits,
    rootLabel,
    rootless,
  };
  if ((await imageStamp(podmanPath, podmanArgs, image)) === null) {
    throw new SandboxError(
      "unavailable",
      `image ${image} is missing: build it with packages/sandbox/scripts/build-image.sh`,
    );
  }
  return { ctx, caps, rootDir, image, loop };
}
