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
 * What clients send for a credential is checked in credential-input.ts; tokens are refreshed in token-refresh.ts.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../../kernel/clock.js";
import { badRequest, notFound } from "../../kernel/errors.js";
import { isRecord } from "../../kernel/is-record.js";
import type { Scope } from "../../model/scope.js";
import type { OutboundGuard } from "../../platform/net/outbound-guard.js";
import type {
  SealedKind,
  Store,
  VaultCredentialRecord,
  VaultListOptions,
  VaultRecord,
} from "../../store/types.js";
import {
  type CredentialSecret,
  checkTokenEndpoint,
  parseCredentialAuth,
  rotateCredential,
  trimmedName,
} from "./credential-input.js";
import { TokenRefresher } from "./token-refresh.js";

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

export class VaultService {
  private readonly tokens: TokenRefresher;

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
  ) {
    this.tokens = new TokenRefresher({
      store: deps.store,
      clock: deps.clock,
      logger: deps.logger,
      outbound: deps.outbound,
      openSecret: (c) => this.openSecret(c),
      seal: (id, secret) => this.seal(id, secret),
    });
  }

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
    const { auth, secret, server_url } = parseCredentialAuth(f.auth, "auth", this.deps.allowEnvCredentials);
    await checkTokenEndpoint(auth, "auth.refresh.token_endpoint", this.deps.outbound);
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
      const rotated = rotateCredential(c, f.auth, (x) => this.openSecret(x));
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
      const token = await this.tokens.currentToken(list[0]!);
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

  // sealing ---------------------------------------------------------------------------------------------------

  private seal(id: string, secret: CredentialSecret): string {
    return this.deps.keyring.seal(JSON.stringify(secret), sealedContext("vault_credential", id));
  }

  private openSecret(c: VaultCredentialRecord): CredentialSecret {
    return JSON.parse(
      this.deps.keyring.open(c.secret, sealedContext("vault_credential", c.id)),
    ) as CredentialSecret;
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
