// A sandbox spec as the backend takes it: checked (id, limits, env, network), with the default image filled in.
import { SandboxError } from "./errors.js";
import { validateEnv } from "./exec-server.js";
import { validateLimits } from "./sizes.js";
import type { SandboxSpec } from "./types.js";

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export function validateSpec(spec: SandboxSpec, defaultImage: string): SandboxSpec {
  if (typeof spec?.id !== "string" || !ID.test(spec.id)) {
    throw new SandboxError("invalid_spec", "id must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}");
  }
  const limits = validateLimits(spec.limits);
  const env = spec.env ?? {};
  validateEnv(env);
  const n = spec.network;
  if (!n || (n.mode !== "none" && n.mode !== "proxy"))
    throw new SandboxError("invalid_spec", "network.mode must be none or proxy");
  if (n.mode === "proxy") {
    if (n.socketDir !== undefined && (typeof n.socketDir !== "string" || !n.socketDir.startsWith("/"))) {
      throw new SandboxError("invalid_spec", "network.socketDir must be an absolute path");
    }
    if (n.caCertPath !== undefined && (typeof n.caCertPath !== "string" || !n.caCertPath.startsWith("/"))) {
      throw new SandboxError("invalid_spec", "network.caCertPath must be an absolute path");
    }
  }
  const network: SandboxSpec["network"] =
    n.mode === "none"
      ? { mode: "none" }
      : { mode: "proxy", socketDir: n.socketDir, caCertPath: n.caCertPath };
  if (
    spec.workspaceDir !== undefined &&
    (typeof spec.workspaceDir !== "string" || !spec.workspaceDir.startsWith("/"))
  )
    throw new SandboxError("invalid_spec", "workspaceDir must be an absolute path");
  return {
    id: spec.id,
    image: spec.image ?? defaultImage,
    limits,
    network,
    env: { ...env },
    ...(spec.workspaceDir ? { workspaceDir: spec.workspaceDir } : {}),
  };
}
