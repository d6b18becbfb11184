// The host directories a proxy-mode sandbox mounts: `egress/` (where the proxy's socket is, unless the spec names a
// `socketDir` of its own) and `trust/` (the proxy's CA and a bundle of the host's CAs plus it). A sandbox without
// network mounts neither. Prepared again on every change of the network spec; the CA is checked, and the text checked
// is what is written (a PEM certificate and no key: whatever is in `trust/` is readable inside the container).
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SandboxError } from "./errors.js";
import type { NetworkSpec } from "./types.js";

export class NetworkDirs {
  /** Whether `trust/` holds the CA bundle of the last prepared spec (the exec-server's variables point at it). */
  hasCa = false;

  constructor(
    private readonly dir: string,
    /** The host's CA bundle, the base of the sandbox's bundle; null when the host has none. */
    private readonly systemCaBundle: string | null,
  ) {}

  /** The host directory of the proxy's socket; null without network. */
  socketDir(network: NetworkSpec): string | null {
    if (network.mode !== "proxy") return null;
    return network.socketDir ?? join(this.dir, "egress");
  }

  /** The host directory mounted at the trust mount; null without network. */
  trustDir(network: NetworkSpec): string | null {
    return network.mode === "proxy" ? join(this.dir, "trust") : null;
  }

  async prepare(n: NetworkSpec): Promise<void> {
    if (n.mode !== "proxy") return;
    if (!n.socketDir) await mkdir(join(this.dir, "egress"), { recursive: true, mode: 0o755 });
    const trust = join(this.dir, "trust");
    await mkdir(trust, { recursive: true, mode: 0o755 });
    this.hasCa = false;
    if (n.caCertPath) {
      const ca = await readFile(n.caCertPath, "utf8").catch(() => {
        throw new SandboxError("invalid_spec", `network.caCertPath ${n.caCertPath} cannot be read`);
      });
      if (!ca.includes("-----BEGIN CERTIFICATE-----") || ca.includes("PRIVATE KEY")) {
        throw new SandboxError("invalid_spec", "network.caCertPath must hold a PEM certificate and no key");
      }
      const base = this.systemCaBundle ? await readFile(this.systemCaBundle, "utf8").catch(() => "") : "";
      // The text just checked, not the file again (it could have changed in between).
      await writeFile(join(trust, "ca.crt"), ca, { mode: 0o644 });
      await writeFile(join(trust, "ca-bundle.crt"), `${base.trimEnd()}\n${ca.trim()}\n`, { mode: 0o644 });
      this.hasCa = true;
    }
  }
}
