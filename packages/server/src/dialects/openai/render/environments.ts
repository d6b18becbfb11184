/**
 * The official objects of environments, their templates, vaults and credentials: never a variable's value, a setup
 * command, a file's contents or a credential's secret (the records keep those sealed; nothing here opens them).
 */
import type { Environment, HostedEnvironmentFile } from "openai/resources/beta/agents/agents";
import type { EnvironmentInfo } from "openai/resources/beta/agents/environments/environments";
import type { EnvironmentFile } from "openai/resources/beta/agents/environments/files";
import type { EnvironmentTemplate } from "openai/resources/beta/agents/environments/templates";
import type { Credential } from "openai/resources/beta/agents/vaults/credentials";
import type { Vault } from "openai/resources/beta/agents/vaults/vaults";
import type {
  EnvironmentConfig,
  EnvironmentFileInfo,
  EnvironmentRecord,
  EnvironmentState,
  EnvironmentTemplateRecord,
  VaultCredentialRecord,
  VaultRecord,
} from "../../../model/records.js";

const secs = (t: number) => Math.floor(t);

/** A file placed in an environment: inline bytes, or a copy of a Files API file (which it names). */
function hostedFileObject(f: EnvironmentFileInfo): HostedEnvironmentFile {
  if (f.type === "file_id" && f.file_id !== undefined) {
    return { id: f.id, type: "file_id", file_id: f.file_id, path: f.path, size_bytes: f.size_bytes };
  }
  return { id: f.id, type: "inline", path: f.path, size_bytes: f.size_bytes };
}

/** A session's `environment` when this server prepares it (`openai_hosted`). */
export function hostedEnvironmentObject(id: string, c: EnvironmentConfig): Environment {
  return {
    type: "openai_hosted",
    id,
    capability_directories: c.capability_directories,
    files: c.files.map(hostedFileObject),
    network: { access: c.network.access, allowed_domains: c.network.allowed_domains },
    packages: { npm: c.packages.npm, python: c.packages.python, system: c.packages.system },
    plugins: [],
    skills: [],
    container_size: null,
    desktop: { enabled: false },
    // This server's extension (domain/repositories/spec.ts).
    ...({ repositories: c.repositories ?? [] } as object),
  };
}

export function environmentInfoObject(e: EnvironmentRecord): EnvironmentInfo {
  return {
    id: e.id,
    object: "agent.environment",
    type: e.type,
    status: e.status,
    files: e.config.files.map(hostedFileObject),
    plugins: [],
    skills: [],
  };
}

export function environmentFileObject(
  environmentId: string,
  f: { path: string; size_bytes: number },
): EnvironmentFile {
  return {
    object: "agent.environment.file",
    environment_id: environmentId,
    path: f.path,
    size_bytes: f.size_bytes,
  };
}

/** `agent.session.environment.<status>` (this server's states: pending, ready, connected, failed, expired). */
export function environmentEventObject(
  state: EnvironmentState,
  ids: { event_id: string; session_id: string; turn_id: string | null },
) {
  return {
    type: `agent.session.environment.${state.status}` as const,
    ...ids,
    environment: { id: state.id, type: state.type, status: state.status, error: state.error },
  };
}

export function templateObject(t: EnvironmentTemplateRecord): EnvironmentTemplate {
  return {
    id: t.id,
    object: "agent.environment.template",
    created_at: secs(t.created_at),
    updated_at: secs(t.updated_at),
    name: t.name,
    capability_directories: t.config.capability_directories ?? [],
    files: t.config.files,
    network: t.config.network ?? { access: "disabled", allowed_domains: [] },
    packages: t.config.packages,
    plugins: [],
    skills: [],
    desktop: t.config.desktop ?? { enabled: false },
    ...({ repositories: t.config.repositories ?? null } as object),
  };
}

export function vaultObject(v: VaultRecord): Vault {
  return { id: v.id, object: "vault", created_at: secs(v.created_at), name: v.name, metadata: v.metadata };
}

export function credentialObject(c: VaultCredentialRecord): Credential {
  return {
    id: c.id,
    object: "vault.credential",
    vault_id: c.vault_id,
    created_at: secs(c.created_at),
    updated_at: secs(c.updated_at),
    name: c.name,
    metadata: c.metadata,
    // The stored auth holds the non-secret fields only (the secrets are sealed apart).
    auth: c.auth as unknown as Credential["auth"],
  };
}
