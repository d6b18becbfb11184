/**
 * Vaults and their credentials, within the caller's project (another project's are "not found"). Secrets are
 * write-only: sealed with the service's key ring (kernel/secrets.ts) the moment they arrive, opened only to be given
 * to an engine thread (an MCP server's Authorization header) or, behind an operator flag, to the agent's commands
 * (an environment-variable credential), never returned, never logged.
 *
 * A session's vaults (`vault_ids`) select credentials; an MCP server of the session gets the one credential whose
 * server URL is its own (normalised), as `Authorization: Bearer <token>`, on every start and resume of its engine
 * thread; an `mcp_oauth` token that expires within two minutes is refreshed first (its refresh token, at its token
 * endpoint, which must be a public address unless the operator allows private targets: platform/net/outbound-guard.ts).
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../../kernel/clock.js";
import { ApiError, badRequest, notFound } from "../../kernel/errors.js";
import { isRecord } from "../../kernel/is-record.js";
import type { Scope } from "../../model/scope.js";
import { type OutboundGuard, TargetRefused } from "../../platform/net/outbound-guard.js";
import type {
  CredentialAuthType,
  SealedKind,
  Store,
  VaultCredentialRecord,
  VaultListOptions,
  VaultRecord,
} from "../../store/types.js";
import { OAuthRefreshError, refreshAccessToken } from "./oauth.js";
import { checkCredentialUrl, normaliseServerUrl } from "./urls.js";

/** Seals and opens secrets at rest with the current key and the previous ones (kernel/secrets.ts SecretKeyring). */
export interface Keyring {
  seal(plain: string, context: string): string;
  open(sealed: string, context: string): string;
  readonly currentPrefix: string;
  reseal(sealed: string, context: string): string;
}

/** What a sealed value is bound to (additional authenticated data: a value copied to another row does not open). */
export const sealedContext = (kind: SealedKind, id: string): string => `${kind}:${id}`;

export const newObjectId = (prefix: string): string => prefix + randomBytes(12).toString("hex");

/** A token that expires within this many seconds is refreshed before it is given out. */
const REFRESH_MARGIN_SECONDS = 120;
const MAX_SECRET_BYTES = 16 * 1024;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const RESERVED_NAMES = new Set(["HOME", "PATH", "SHLVL", "TMPDIR", "PWD", "NODE_PATH", "VIRTUAL_ENV"]);
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** The secret fields of a credential (sealed as JSON). */
interface CredentialSecret {
  token?: string;
  access_token?: string;
  refresh_token?: string;
  client_secret?: string;
  secret_value?: string;
  password?: string;
}

/** What the service's git sends to a repository: an Authorization header, only to URLs under `prefix`. */
export interface GitAuth {
  header: string;
  prefix: string;
}

export interface VaultFields {
  name?: string | null;
  metadata?: Record<string, string> | null;
}

export interface CredentialFields {
  name?: string;
  metadata?: Record<string, string>;
  auth?: Record<string, unknown>;
}

/** What a session's engine thread gets from its vaults. */
export interface EnvCredential {
  name: string;
  credentialId: string;
  value: string;
  /** The hosts its `networking` allows it to be sent to (`limited`), or "any" (`unrestricted`). */
  hosts: string[] | "any";
}

export interface SessionCredentials {
  /** Authorization header per normalised MCP server URL (an Error: the URL matches several credentials). */
  mcp: Map<string, string | Error>;
  /** Environment-variable credentials (only when the operator allows them). */
  env: Record<string, string>;
  /** The same, with the credentials they come from (a sandbox gets placeholders: domain/sandboxes/secrets.ts). */
  envCredentials: EnvCredential[];
  /** Every secret value handed out (to be redacted from what the session stores). */
  values: string[];
}

const unsupportedCredential = (message: string, param: string) =>
  new ApiError("unprocessable", message, "ValueError", param, "unsupported_credential_type");

function trimmedName(raw: unknown, where: string): string {
  if (typeof raw !== "string") throw badRequest(`'${where}' must be a string`, where);
  const name = raw.trim();
  const bytes = Buffer.byteLength(name);
  if (bytes < 1 || bytes > 256) throw badRequest(`'${where}' must hold 1 to 256 bytes once trimmed`, where);
  return name;
}

/** A header-safe secret: not empty, no line breaks or NUL, bounded. (Never quoted back in an error.) */
function secretString(raw: unknown, where: string): string {
  if (typeof raw !== "string" || raw === "") throw badRequest(`'${where}' must be a non-empty string`, where);
  if (/[\r\n\0]/.test(raw))
    throw badRequest(`'${where}' cannot contain line breaks or NUL characters`, where);
  if (Buffer.byteLength(raw) > MAX_SECRET_BYTES) throw badRequest(`'${where}' is too long`, where);
  return raw;
}

function optionalString(raw: unknown, where: string): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== "string") throw badRequest(`'${where}' must be a string`, where);
  return raw;
}

function rfc3339(raw: unknown, where: string): string | null {
  if (raw === undefined || raw === null) return null;
  if (
    typeof raw !== "string" ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(raw)
  ) {
    throw badRequest(`'${where}' must be an RFC 3339 timestamp like 2026-01-31T12:00:00Z`, where);
  }
  if (Number.isNaN(Date.parse(raw))) throw badRequest(`'${where}' is not a valid time`, where);
  return new Date(Date.parse(raw)).toISOString().replace(/\.000Z$/, "Z");
}

function tokenEndpointAuth(
  raw: unknown,
  where: string,
  create: boolean,
): { type: string; secret: string | null } {
  if (!isRecord(raw)) throw badRequest(`'${where}' must be an object with a type`, where);
  const type = raw.type;
  if (type === "none") return { type, secret: null };
  if (type === "client_secret_basic" || type === "client_secret_post") {
    if (!create && (raw.client_secret === undefined || raw.client_secret === null))
      return { type, secret: null };
    return { type, secret: secretString(raw.client_secret, `${where}.client_secret`) };
  }
  throw badRequest(
    `'${where}.type' must be none, client_secret_basic or client_secret_post`,
    `${where}.type`,
  );
}

export class VaultService {
  /** Refreshes in flight per credential (one at a time). */
  private readonly refreshing = new Map<string, Promise<string>>();

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      keyring: Keyring;
      logger: Logger;
      allowEnvCredentials: boolean;
      /** Where token endpoints may be (the service POSTs to them itself). */
      outbound: OutboundGuard;
    },
  ) {}

  // vaults ----------------------------------------------------------------------------------------------------

  async create(scope: Scope, f: VaultFields): Promise<VaultRecord> {
    const now = this.deps.clock.now();
    const v: VaultRecord = {
      id: newObjectId("vault_"),
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      name: f.name === undefined || f.name === null ? null : trimmedName(f.name, "name"),
      metadata: f.metadata ?? {},
      status: "active",
    };
    await this.deps.store.insertVault(v);
    return v;
  }

  /** The vault, if it belongs to the caller's project. */
  async get(scope: Scope, id: string, param = "vault_id"): Promise<VaultRecord> {
    const v = await this.deps.store.getVault(id);
    if (!v || v.project_id !== scope.projectId) throw notFound(`Vault ${id} not found`, param);
    return v;
  }

  async update(scope: Scope, id: string, f: VaultFields): Promise<VaultRecord> {
    await this.get(scope, id);
    const v = await this.deps.store.updateVault(id, {
      ...(f.name !== undefined ? { name: f.name === null ? null : trimmedName(f.name, "name") } : {}),
      ...(f.metadata !== undefined && f.metadata !== null ? { metadata: f.metadata } : {}),
      updated_at: this.deps.clock.now(),
    });
    if (!v) throw notFound(`Vault ${id} not found`, "vault_id");
    return v;
  }

  list(scope: Scope, opts: VaultListOptions) {
    return this.deps.store.listVaults({ ...opts, project_id: scope.projectId });
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id);
    await this.deps.store.deleteVault(id);
  }

  /** Vault ids a session or environment may use: each must be a vault of the caller's project. */
  async checkVaultIds(
    scope: Scope,
    ids: readonly string[] | null | undefined,
    where: string,
  ): Promise<string[]> {
    const list = [...new Set(ids ?? [])];
    if (list.length > 10) throw badRequest(`'${where}': at most 10 vaults`, where);
    for (const id of list) await this.get(scope, id, where);
    return list;
  }

  // credentials -----------------------------------------------------------------------------------------------

  async createCredential(scope: Scope, vaultId: string, f: CredentialFields): Promise<VaultCredentialRecord> {
    await this.get(scope, vaultId);
    const id = newObjectId("cred_");
    const { auth, secret, server_url } = this.parseAuth(f.auth, "auth");
    await this.checkTokenEndpoint(auth, "auth.refresh.token_endpoint");
    const now = this.deps.clock.now();
    const c: VaultCredentialRecord = {
      id,
      vault_id: vaultId,
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      name: trimmedName(f.name, "name"),
      metadata: f.metadata ?? {},
      status: "active",
      auth,
      secret: this.seal(id, secret),
      server_url,
    };
    await this.deps.store.insertVaultCredential(c);
    return c;
  }

  /** The credential, if it is in that vault of the caller's project. */
  async getCredential(scope: Scope, vaultId: string, id: string): Promise<VaultCredentialRecord> {
    await this.get(scope, vaultId);
    const c = await this.deps.store.getVaultCredential(id);
    if (!c || c.vault_id !== vaultId || c.project_id !== scope.projectId) {
      throw notFound(`Credential ${id} not found`, "credential_id");
    }
    return c;
  }

  /** New metadata, and/or new secrets for the credential's own kind of authentication (rotation). */
  async updateCredential(
    scope: Scope,
    vaultId: string,
    id: string,
    f: CredentialFields,
  ): Promise<VaultCredentialRecord> {
    const c = await this.getCredential(scope, vaultId, id);
    let auth = c.auth;
    let sealed = c.secret;
    if (f.auth !== undefined) {
      const rotated = this.rotate(c, f.auth);
      auth = rotated.auth;
      sealed = this.seal(id, rotated.secret);
    }
    const next = await this.deps.store.updateVaultCredential(id, {
      ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
      ...(f.name !== undefined ? { name: trimmedName(f.name, "name") } : {}),
      auth,
      secret: sealed,
      updated_at: this.deps.clock.now(),
    });
    if (!next) throw notFound(`Credential ${id} not found`, "credential_id");
    return next;
  }

  async listCredentials(scope: Scope, vaultId: string, opts: VaultListOptions) {
    await this.get(scope, vaultId);
    return this.deps.store.listVaultCredentials(vaultId, opts);
  }

  async deleteCredential(scope: Scope, vaultId: string, id: string): Promise<void> {
    await this.getCredential(scope, vaultId, id);
    await this.deps.store.deleteVaultCredential(id);
  }

  // what sessions get -----------------------------------------------------------------------------------------

  /** The credentials of a session's vaults, opened (and refreshed when about to expire). */
  async forSession(projectId: string, vaultIds: readonly string[]): Promise<SessionCredentials> {
    const out: SessionCredentials = { mcp: new Map(), env: {}, envCredentials: [], values: [] };
    if (vaultIds.length === 0) return out;
    const creds = (await this.deps.store.credentialsOfVaults(vaultIds)).filter(
      (c) => c.project_id === projectId,
    );
    const byUrl = new Map<string, VaultCredentialRecord[]>();
    for (const c of creds) {
      if (c.auth.type === "environment_variable") {
        if (!this.deps.allowEnvCredentials) continue;
        const value = this.openSecret(c).secret_value ?? "";
        out.env[String(c.auth.secret_name)] = value;
        out.envCredentials.push({
          name: String(c.auth.secret_name),
          credentialId: c.id,
          value,
          hosts: credentialHosts(c.auth.networking),
        });
        out.values.push(value);
        continue;
      }
      if (!c.server_url) continue;
      byUrl.set(c.server_url, [...(byUrl.get(c.server_url) ?? []), c]);
    }
    for (const [url, list] of byUrl) {
      if (list.length > 1) {
        out.mcp.set(
          url,
          new Error(
            `${list.length} credentials of the session's vaults match the MCP server ${url} ` +
              `(${list.map((c) => c.id).join(", ")}): keep one per server URL in the session's vaults`,
          ),
        );
        continue;
      }
      const token = await this.currentToken(list[0]!);
      out.mcp.set(url, `Bearer ${token}`);
      out.values.push(token);
    }
    return out;
  }

  /**
   * A `git_http` credential of the project for a repository URL, opened: the header to send. 404 when there is
   * none, 400 when the URL is not under the credential's own.
   */
  async gitAuth(projectId: string, id: string, url: string, where: string): Promise<GitAuth> {
    const c = await this.deps.store.getVaultCredential(id);
    if (!c || c.project_id !== projectId || c.status === "archived") {
      throw notFound(`Vault credential ${id} not found`, where);
    }
    if (c.auth.type !== "git_http") {
      throw badRequest(`'${where}': credential ${id} is a ${c.auth.type} credential, not git_http`, where);
    }
    const prefix = String(c.auth.url);
    if (!underPrefix(url, prefix)) {
      throw badRequest(
        `'${where}': credential ${id} is for repositories under ${prefix}, not ${url}`,
        where,
        "credential_url_mismatch",
      );
    }
    const secret = this.openSecret(c);
    const basic = Buffer.from(`${String(c.auth.username)}:${secret.password ?? ""}`).toString("base64");
    return { header: `Basic ${basic}`, prefix };
  }

  /** The token to send: a static bearer token, or an OAuth access token refreshed when it is about to expire. */
  private async currentToken(c: VaultCredentialRecord): Promise<string> {
    const secret = this.openSecret(c);
    if (c.auth.type === "static_bearer") return secret.token ?? "";
    const expiresAt = typeof c.auth.expires_at === "string" ? Date.parse(c.auth.expires_at) / 1000 : null;
    const refresh = c.auth.refresh as Record<string, unknown> | null | undefined;
    const due = expiresAt !== null && expiresAt - this.deps.clock.now() < REFRESH_MARGIN_SECONDS;
    if (!due || !refresh || !secret.refresh_token) return secret.access_token ?? "";
    let pending = this.refreshing.get(c.id);
    if (!pending) {
      pending = this.refresh(c, refresh, secret).finally(() => this.refreshing.delete(c.id));
      this.refreshing.set(c.id, pending);
    }
    return pending;
  }

  private async refresh(
    c: VaultCredentialRecord,
    refresh: Record<string, unknown>,
    secret: CredentialSecret,
  ): Promise<string> {
    const { clock, store, logger } = this.deps;
    const authType = (refresh.token_endpoint_auth as { type?: string } | undefined)?.type;
    try {
      const t = await refreshAccessToken(
        {
          token_endpoint: String(refresh.token_endpoint),
          client_id: String(refresh.client_id),
          auth: authType === "client_secret_basic" || authType === "client_secret_post" ? authType : "none",
          client_secret: secret.client_secret ?? null,
          refresh_token: secret.refresh_token ?? "",
          resource: typeof refresh.resource === "string" ? refresh.resource : null,
          scope: typeof refresh.scope === "string" ? refresh.scope : null,
        },
        clock.now(),
        (url, init) => this.deps.outbound.fetch(url, init),
      );
      const next: CredentialSecret = {
        ...secret,
        access_token: t.access_token,
        ...(t.refresh_token ? { refresh_token: t.refresh_token } : {}),
      };
      const expires = t.expires_at === null ? null : new Date(t.expires_at * 1000).toISOString();
      await store.updateVaultCredential(c.id, {
        auth: { ...c.auth, expires_at: expires },
        secret: this.seal(c.id, next),
        updated_at: clock.now(),
      });
      logger.info({ credential: c.id }, "refreshed an OAuth access token");
      return t.access_token;
    } catch (err) {
      const why = err instanceof OAuthRefreshError ? err.message : String(err);
      logger.warn({ credential: c.id, why }, "OAuth token refresh failed: the stored access token is used");
      return secret.access_token ?? "";
    }
  }

  /**
   * Re-seals every value sealed with a previous key (credentials, environments' and templates' secrets) with the
   * current one; returns how many. Values no key of the ring opens are left (and logged).
   */
  async resealAll(): Promise<number> {
    let n = 0;
    for (const kind of ["vault_credential", "environment", "environment_template"] as const)
      n += await this.reseal(kind);
    return n;
  }

  /** Re-seals every sealed value of a kind sealed with a previous key; returns how many. */
  async reseal(kind: SealedKind): Promise<number> {
    const { store, keyring, logger } = this.deps;
    const failed = new Set<string>();
    let done = 0;
    for (;;) {
      const page = (await store.listSealed(kind, keyring.currentPrefix, 200)).filter(
        (r) => !failed.has(r.id),
      );
      if (page.length === 0) return done;
      for (const r of page) {
        try {
          const next = keyring.reseal(r.sealed, sealedContext(kind, r.id));
          if (await store.replaceSealed(kind, r.id, r.sealed, next)) done++;
        } catch (err) {
          failed.add(r.id);
          logger.error({ kind, id: r.id, err: String(err) }, "a sealed secret could not be re-sealed");
        }
      }
    }
  }

  // parsing ---------------------------------------------------------------------------------------------------

  /**
   * An OAuth credential's token endpoint must be somewhere the service may connect (as written and resolved now;
   * each refresh checks the address it connects to again). It cannot change afterwards.
   */
  private async checkTokenEndpoint(auth: VaultCredentialRecord["auth"], where: string): Promise<void> {
    const refresh = auth.refresh as Record<string, unknown> | null | undefined;
    if (auth.type !== "mcp_oauth" || !refresh || typeof refresh.token_endpoint !== "string") return;
    try {
      await this.deps.outbound.checkResolved(new URL(refresh.token_endpoint));
    } catch (err) {
      if (err instanceof TargetRefused) throw badRequest(`'${where}': ${err.message}`, where);
      throw err;
    }
  }

  private seal(id: string, secret: CredentialSecret): string {
    return this.deps.keyring.seal(JSON.stringify(secret), sealedContext("vault_credential", id));
  }

  private openSecret(c: VaultCredentialRecord): CredentialSecret {
    return JSON.parse(
      this.deps.keyring.open(c.secret, sealedContext("vault_credential", c.id)),
    ) as CredentialSecret;
  }

  private parseAuth(
    raw: unknown,
    where: string,
  ): { auth: VaultCredentialRecord["auth"]; secret: CredentialSecret; server_url: string | null } {
    if (!isRecord(raw)) throw badRequest(`'${where}' must be an object with a type`, where);
    const type = raw.type as CredentialAuthType;
    switch (type) {
      case "static_bearer": {
        const url = checkCredentialUrl(
          String(raw.mcp_server_url ?? ""),
          `${where}.mcp_server_url`,
        ).toString();
        return {
          auth: { type, mcp_server_url: url },
          secret: { token: secretString(raw.token, `${where}.token`) },
          server_url: normaliseServerUrl(url),
        };
      }
      case "mcp_oauth": {
        const url = checkCredentialUrl(
          String(raw.mcp_server_url ?? ""),
          `${where}.mcp_server_url`,
        ).toString();
        const secret: CredentialSecret = {
          access_token: secretString(raw.access_token, `${where}.access_token`),
        };
        let refresh: Record<string, unknown> | null = null;
        if (raw.refresh !== undefined && raw.refresh !== null) {
          const r = raw.refresh;
          const w = `${where}.refresh`;
          if (!isRecord(r)) throw badRequest(`'${w}' must be an object`, w);
          const endpointAuth = tokenEndpointAuth(r.token_endpoint_auth, `${w}.token_endpoint_auth`, true);
          secret.refresh_token = secretString(r.refresh_token, `${w}.refresh_token`);
          if (endpointAuth.secret) secret.client_secret = endpointAuth.secret;
          refresh = {
            client_id: trimmedName(r.client_id, `${w}.client_id`),
            token_endpoint: checkCredentialUrl(
              String(r.token_endpoint ?? ""),
              `${w}.token_endpoint`,
            ).toString(),
            token_endpoint_auth: { type: endpointAuth.type },
            resource: optionalString(r.resource, `${w}.resource`),
            scope: optionalString(r.scope, `${w}.scope`),
          };
        }
        return {
          auth: {
            type,
            mcp_server_url: url,
            expires_at: rfc3339(raw.expires_at, `${where}.expires_at`),
            refresh,
          },
          secret,
          server_url: normaliseServerUrl(url),
        };
      }
      case "git_http": {
        const url = checkCredentialUrl(String(raw.url ?? ""), `${where}.url`).toString();
        const username = raw.username ?? "x-access-token";
        if (
          typeof username !== "string" ||
          username === "" ||
          username.length > 256 ||
          /[:\s]/.test(username)
        ) {
          throw badRequest(
            `'${where}.username' must be a non-empty name without ':' or spaces`,
            `${where}.username`,
          );
        }
        return {
          auth: { type, url, username },
          secret: { password: secretString(raw.password, `${where}.password`) },
          server_url: null,
        };
      }
      case "environment_variable": {
        if (!this.deps.allowEnvCredentials) {
          throw unsupportedCredential(
            "environment_variable credentials are not supported by this server: it has no egress proxy to keep " +
              "the value from the agent's code, and gives such a value to the agent's commands only when its " +
              "operator allows it (--allow-env-credentials)",
            `${where}.type`,
          );
        }
        const name = raw.secret_name;
        if (typeof name !== "string" || !SECRET_NAME.test(name)) {
          throw badRequest(
            `'${where}.secret_name' must be letters, digits and '_', not starting with a digit`,
            `${where}.secret_name`,
          );
        }
        if (name.startsWith("CODEX_") || RESERVED_NAMES.has(name)) {
          throw badRequest(`'${where}.secret_name': ${name} is reserved`, `${where}.secret_name`);
        }
        return {
          auth: {
            type,
            secret_name: name,
            networking: this.networking(raw.networking, `${where}.networking`),
          },
          secret: { secret_value: secretString(raw.secret_value, `${where}.secret_value`) },
          server_url: null,
        };
      }
      default:
        throw badRequest(
          `'${where}.type' must be mcp_oauth, static_bearer, environment_variable or git_http`,
          `${where}.type`,
        );
    }
  }

  private networking(raw: unknown, where: string): Record<string, unknown> {
    if (!isRecord(raw)) throw badRequest(`'${where}' must be an object with a type`, where);
    if (raw.type === "unrestricted") return { type: "unrestricted" };
    if (raw.type !== "limited")
      throw badRequest(`'${where}.type' must be unrestricted or limited`, `${where}.type`);
    const hosts = raw.allowed_hosts;
    if (!Array.isArray(hosts) || hosts.length < 1 || hosts.length > 16) {
      throw badRequest(`'${where}.allowed_hosts' must list 1 to 16 hosts`, `${where}.allowed_hosts`);
    }
    const list = hosts.map((h, i) => {
      const host = typeof h === "string" ? h.toLowerCase() : "";
      if (!HOST.test(host)) {
        throw badRequest(
          `'${where}.allowed_hosts[${i}]' must be a host name or IPv4 address (no scheme, port, path or wildcard)`,
          `${where}.allowed_hosts[${i}]`,
        );
      }
      return host;
    });
    if (new Set(list).size !== list.length) {
      throw badRequest(`'${where}.allowed_hosts' must be distinct`, `${where}.allowed_hosts`);
    }
    return { type: "limited", allowed_hosts: list };
  }

  /** New secrets for the credential's kind; anything else about it stays. */
  private rotate(
    c: VaultCredentialRecord,
    raw: Record<string, unknown>,
  ): { auth: VaultCredentialRecord["auth"]; secret: CredentialSecret } {
    const where = "auth";
    if (raw.type !== c.auth.type) {
      throw badRequest(
        `'${where}.type' must be the credential's own (${c.auth.type}): create a new credential to change it`,
        `${where}.type`,
      );
    }
    const secret = this.openSecret(c);
    switch (c.auth.type) {
      case "static_bearer":
        return { auth: c.auth, secret: { ...secret, token: secretString(raw.token, `${where}.token`) } };
      case "environment_variable":
        return {
          auth: c.auth,
          secret: { ...secret, secret_value: secretString(raw.secret_value, `${where}.secret_value`) },
        };
      case "git_http":
        return {
          auth: c.auth,
          secret: { ...secret, password: secretString(raw.password, `${where}.password`) },
        };
      default: {
        const auth = { ...c.auth };
        const next = { ...secret };
        if (raw.access_token !== undefined && raw.access_token !== null) {
          next.access_token = secretString(raw.access_token, `${where}.access_token`);
          // A new access token without an expiry: the old expiry no longer applies.
          auth.expires_at = null;
        }
        if (raw.expires_at !== undefined) auth.expires_at = rfc3339(raw.expires_at, `${where}.expires_at`);
        if (raw.refresh !== undefined && raw.refresh !== null) {
          const r = raw.refresh;
          const w = `${where}.refresh`;
          if (!isRecord(r)) throw badRequest(`'${w}' must be an object`, w);
          const current = auth.refresh as Record<string, unknown> | null;
          if (!current) throw badRequest(`'${w}': this credential has no refresh configuration`, w);
          const updated = { ...current };
          if (r.refresh_token !== undefined && r.refresh_token !== null) {
            next.refresh_token = secretString(r.refresh_token, `${w}.refresh_token`);
          }
          if (r.scope !== undefined) updated.scope = optionalString(r.scope, `${w}.scope`);
          if (r.token_endpoint_auth !== undefined && r.token_endpoint_auth !== null) {
            const ea = tokenEndpointAuth(r.token_endpoint_auth, `${w}.token_endpoint_auth`, false);
            if (ea.type !== (current.token_endpoint_auth as { type: string }).type) {
              throw badRequest(
                `'${w}.token_endpoint_auth.type' must stay ${(current.token_endpoint_auth as { type: string }).type}`,
                `${w}.token_endpoint_auth.type`,
              );
            }
            if (ea.secret) next.client_secret = ea.secret;
          }
          auth.refresh = updated;
        }
        return { auth, secret: next };
      }
    }
  }
}

/** Where an environment-variable credential may be sent, by its `networking`. */
function credentialHosts(networking: unknown): string[] | "any" {
  if (!isRecord(networking) || networking.type !== "limited" || !Array.isArray(networking.allowed_hosts))
    return "any";
  return networking.allowed_hosts.filter((h): h is string => typeof h === "string");
}

/** Whether a URL is the prefix's or under it (scheme and host compared as URLs, the path by components). */
function underPrefix(url: string, prefix: string): boolean {
  let u: URL;
  let p: URL;
  try {
    u = new URL(url);
    p = new URL(prefix);
  } catch {
    return false;
  }
  if (u.protocol !== p.protocol || u.host !== p.host) return false;
  const base = p.pathname.replace(/\/+$/, "");
  return u.pathname === base || u.pathname.startsWith(`${base}/`);
}
