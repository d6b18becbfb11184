// The podman command line of a sandbox container and the variables of its exec-server: limits, mounts, network.
import { CODEX_MOUNT } from "./exec-server.js";
import type { SandboxRecord } from "./types.js";

export const WORKSPACE_PATH = "/workspace";
export const EGRESS_MOUNT = "/run/egress";
export const TRUST_MOUNT = "/run/codex-trust";
export const PROXY_PORT = 3128;
export const LABEL_ROOT = "io.codex-agent-api.sandbox.root";
export const LABEL_KEY = "io.codex-agent-api.sandbox.key";

export interface ContainerContext {
  uid: number;
  gid: number;
  home: string;
  vendorDir: string;
  ulimits: { nofile: number; nproc: number };
  rootLabel: string;
  rootless: boolean;
}

export interface ContainerPaths {
  workspace: string;
  /** Host directory mounted at /run/egress (proxy mode). */
  socketDir: string | null;
  /** Host directory mounted at /run/codex-trust (proxy mode). */
  trustDir: string | null;
}

/** The bridge inside a proxy-mode container: 127.0.0.1:3128 -> /run/egress/proxy.sock (restarted if it ends). */
const PROXY_INIT = `while :; do socat TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${EGRESS_MOUNT}/proxy.sock; sleep 1; done`;

export function runArgs(record: SandboxRecord, paths: ContainerPaths, ctx: ContainerContext): string[] {
  const { limits } = record;
  const args = [
    "run",
    "-d",
    "--init",
    "--name",
    record.containerName,
    "--hostname",
    record.hostname,
    "--label",
    `${LABEL_ROOT}=${ctx.rootLabel}`,
    "--label",
    `${LABEL_KEY}=${record.key}`,
    "--network",
    "none",
    "--read-only",
    "--user",
    `${ctx.uid}:${ctx.gid}`,
    "--cap-drop",
    "all",
    "--security-opt",
    "no-new-privileges",
    "--log-driver",
    "none",
    "--tmpfs",
    `/tmp:rw,nosuid,nodev,size=${limits.tmpBytes},mode=1777`,
    "--tmpfs",
    `${ctx.home}:rw,nosuid,nodev,size=${limits.tmpBytes},mode=0700,U`,
    "--memory",
    String(limits.memoryBytes),
    "--memory-swap",
    String(limits.memoryBytes),
    "--cpus",
    String(limits.cpus),
    "--pids-limit",
    String(limits.pids),
    "--ulimit",
    `nofile=${ctx.ulimits.nofile}:${ctx.ulimits.nofile}`,
    "--ulimit",
    `nproc=${ctx.ulimits.nproc}:${ctx.ulimits.nproc}`,
    "-e",
    `HOME=${ctx.home}`,
    "-w",
    WORKSPACE_PATH,
    "-v",
    `${paths.workspace}:${WORKSPACE_PATH}:rw,nosuid,nodev`,
    "-v",
    `${ctx.vendorDir}:${CODEX_MOUNT}:ro`,
  ];
  if (ctx.rootless) args.push("--userns", `keep-id:uid=${ctx.uid},gid=${ctx.gid}`);
  if (record.network.mode === "proxy") {
    if (paths.socketDir) args.push("-v", `${paths.socketDir}:${EGRESS_MOUNT}:ro`);
    if (paths.trustDir) args.push("-v", `${paths.trustDir}:${TRUST_MOUNT}:ro`);
    args.push(record.image, "/bin/sh", "-c", PROXY_INIT);
  } else {
    args.push(record.image, "sleep", "infinity");
  }
  return args;
}

/** Variables of the exec-server (and so of every command): the spec's, then the proxy's and the trust store's. */
export function execServerEnv(record: SandboxRecord, hasCa: boolean): Record<string, string> {
  const env: Record<string, string> = { ...record.env };
  if (record.network.mode === "proxy") {
    const proxy = `http://127.0.0.1:${PROXY_PORT}`;
    for (const k of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"])
      env[k] = proxy;
    env.NO_PROXY = "";
    env.no_proxy = "";
    if (hasCa) {
      const bundle = `${TRUST_MOUNT}/ca-bundle.crt`;
      for (const k of [
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
      ]) {
        env[k] = bundle;
      }
      env.CARGO_HTTP_CAINFO = bundle;
      env.NODE_EXTRA_CA_CERTS = `${TRUST_MOUNT}/ca.crt`;
    }
  }
  return env;
}

/** A hostname from a session id: lowercase (musl's /etc/hosts match is case-sensitive: a mixed-case name costs a
 * 5 s DNS timeout in the exec-server), [a-z0-9-], at most 63 characters. */
export function hostnameFor(id: string): string {
  const h = id
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return h || "sandbox";
}
