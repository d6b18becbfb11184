/**
 * Environments this server prepares for sessions, their templates, vaults and credentials (secrets sealed), and
 * uploaded files, as stored.
 */
// Environments (prepared by this server for sessions) and vaults (credentials for MCP servers and environments).

export type EnvironmentStatus =
  | "pending"
  | "ready"
  | "connected"
  | "disconnected"
  | "suspended"
  | "expired"
  | "failed";

/** Why an environment failed: a code (setup_command_failed, package_install_failed, …) and the setup log's tail. */
export interface EnvironmentError {
  code: string;
  message: string;
  type: string;
}

/** A file placed in an environment, without its contents. */
export interface EnvironmentFileInfo {
  id: string;
  type: "inline" | "file_id";
  /** The official path, `/workspace/…`. */
  path: string;
  size_bytes: number;
  file_id?: string;
}

export interface EnvironmentNetwork {
  access: "enabled" | "disabled" | "restricted";
  allowed_domains: string[];
}

export interface EnvironmentPackages {
  npm: string[];
  python: string[];
  system: string[];
}

/** An environment's configuration as it may be shown: never env values, setup commands or file contents. */
/** A repository an environment starts from (its `repositories`: this server's extension). */
export interface RepositorySource {
  /** As the client wrote it (https, http, git, or a path when the operator allows). */
  url: string;
  /** Branch, tag or full commit id; null: the remote's default branch. */
  ref: string | null;
  /** Official path of its root: `/workspace` or `/workspace/…`. */
  path: string;
  depth: number | null;
  /** A `git_http` vault credential of the project (its id), or null. */
  credential: string | null;
  output: RepositoryOutputSetting | null;
}

/** Commit the workspace's changes after every turn onto `branch` (default `codex/<session id>`), and push them. */
export interface RepositoryOutputSetting {
  type: "branch";
  branch: string | null;
  push: boolean;
}

export interface EnvironmentConfig {
  capability_directories: string[];
  /** Absent on environments stored before repositories existed. */
  repositories?: RepositorySource[];
  files: EnvironmentFileInfo[];
  network: EnvironmentNetwork;
  packages: EnvironmentPackages;
  environment_template_id: string | null;
  /** How many setup commands ran (their text is write-only). */
  setup_commands: number;
}

export interface EnvironmentRecord {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  type: "openai_hosted";
  status: EnvironmentStatus;
  /** The session it belongs to (null: created ahead of a session, not attached yet). */
  session_id: string | null;
  /** Its directory: the session's workspace. */
  directory: string;
  config: EnvironmentConfig;
  /** The write-only parts (env values, setup commands) as sealed JSON (kernel/secrets.ts); null: none. */
  secrets: string | null;
  error: EnvironmentError | null;
  /** Vaults whose environment-variable credentials it gets (besides its session's). */
  vault_ids: string[];
  /** The instance that prepares it (while pending). */
  owner_instance: string | null;
}

/** A template file as it may be shown (inline contents are sealed with the template's secrets). */
export type TemplateFileInfo =
  | { type: "inline"; path: string; size_bytes: number }
  | { type: "file_id"; path: string; file_id: string };

/** A template's configuration as it may be shown; null: not set (the default applies). */
export interface EnvironmentTemplateConfig {
  capability_directories: string[] | null;
  files: TemplateFileInfo[];
  network: EnvironmentNetwork | null;
  packages: EnvironmentPackages;
  desktop: { enabled: boolean } | null;
  /** null or absent: none given (a session's inline ones, if any, apply). */
  repositories?: RepositorySource[] | null;
}

export interface EnvironmentTemplateRecord {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  config: EnvironmentTemplateConfig;
  /** Env values, setup commands and inline file contents, as sealed JSON; null: none. */
  secrets: string | null;
}

export type VaultStatus = "active" | "archived";

export interface VaultRecord {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  metadata: Record<string, string>;
  status: VaultStatus;
}

/** `git_http`: this server's extension, a user name and password (or token) for git over HTTP(S). */
export type CredentialAuthType = "mcp_oauth" | "static_bearer" | "environment_variable" | "git_http";

export interface VaultCredentialRecord {
  id: string;
  vault_id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string;
  metadata: Record<string, string>;
  status: VaultStatus;
  /** The authentication's non-secret fields, as shown (type, server URL, expiry, refresh metadata, variable name). */
  auth: { type: CredentialAuthType } & Record<string, unknown>;
  /** The secret fields (tokens, client secret, value) as sealed JSON. */
  secret: string;
  /** The MCP server URL, normalised (credentials match MCP servers by it); null for environment variables. */
  server_url: string | null;
}

/** Where sealed values live (key rotation re-seals them): environments, templates, credentials. */
export type SealedKind = "environment" | "environment_template" | "vault_credential";

// Files (the official Files API): what was uploaded, per project; the contents are on disk (domain/files/storage.ts).

/** The purposes a file may be uploaded for (the official `FilePurpose`). */
export type FilePurpose = "assistants" | "batch" | "fine-tune" | "vision" | "user_data" | "evals";

export interface FileRecord {
  /** `file-…`. */
  id: string;
  project_id: string;
  created_at: number;
  /** The size of the contents. */
  bytes: number;
  /** The name the client gave the upload (never used as a path). */
  filename: string;
  purpose: FilePurpose;
  /** When it expires (Unix seconds; null: never): an expired file is gone, its row and contents purged. */
  expires_at: number | null;
  /** SHA-256 of the contents (hex): checks what is read back, and identifies repeats of an upload. */
  sha256: string;
}
