/**
 * What a client sends as a credential's `auth`, checked: the stored `auth` (what may be shown), the secret fields (to
 * be sealed) and the normalised MCP server URL it is for; and a rotation, new secrets for the credential's own kind.
 * Errors name the field (their `param`) and never quote a secret.
 */
import { ApiError, badRequest } from "../../kernel/errors.js";
import { isRecord } from "../../kernel/is-record.js";
import { type OutboundGuard, TargetRefused } from "../../platform/net/outbound-guard.js";
import type { CredentialAuthType, VaultCredentialRecord } from "../../store/types.js";
import { checkCredentialUrl, normaliseServerUrl } from "./urls.js";

const MAX_SECRET_BYTES = 16 * 1024;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const RESERVED_NAMES = new Set(["HOME", "PATH", "SHLVL", "TMPDIR", "PWD", "NODE_PATH", "VIRTUAL_ENV"]);
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** The secret fields of a credential (sealed as JSON). */
export interface CredentialSecret {
  token?: string;
  access_token?: string;
  refresh_token?: string;
  client_secret?: string;
  secret_value?: string;
  password?: string;
}

const unsupportedCredential = (message: string, param: string) =>
  new ApiError("unprocessable", message, param, "unsupported_credential_type");

export function trimmedName(raw: unknown, where: string): string {
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

/**
 * An OAuth credential's token endpoint must be somewhere the service may connect (as written and resolved now;
 * each refresh checks the address it connects to again). It cannot change afterwards.
 */
export async function checkTokenEndpoint(
  auth: VaultCredentialRecord["auth"],
  where: string,
  outbound: OutboundGuard,
): Promise<void> {
  const refresh = auth.refresh as Record<string, unknown> | null | undefined;
  if (auth.type !== "mcp_oauth" || !refresh || typeof refresh.token_endpoint !== "string") return;
  try {
    await outbound.checkResolved(new URL(refresh.token_endpoint));
  } catch (err) {
    if (err instanceof TargetRefused) throw badRequest(`'${where}': ${err.message}`, where);
    throw err;
  }
}

/** A new credential's `auth`: what is stored, the secrets to seal, the normalised MCP server URL (or null). */
export function parseCredentialAuth(
  raw: unknown,
  where: string,
  /** Whether the operator allows environment-variable credentials. */
  allowEnvCredentials: boolean,
): { auth: VaultCredentialRecord["auth"]; secret: CredentialSecret; server_url: string | null } {
  if (!isRecord(raw)) throw badRequest(`'${where}' must be an object with a type`, where);
  const type = raw.type as CredentialAuthType;
  switch (type) {
    case "static_bearer": {
      const url = checkCredentialUrl(String(raw.mcp_server_url ?? ""), `${where}.mcp_server_url`).toString();
      return {
        auth: { type, mcp_server_url: url },
        secret: { token: secretString(raw.token, `${where}.token`) },
        server_url: normaliseServerUrl(url),
      };
    }
    case "mcp_oauth": {
      const url = checkCredentialUrl(String(raw.mcp_server_url ?? ""), `${where}.mcp_server_url`).toString();
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
      if (!allowEnvCredentials) {
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
          networking: networking(raw.networking, `${where}.networking`),
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

function networking(raw: unknown, where: string): Record<string, unknown> {
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
export function rotateCredential(
  c: VaultCredentialRecord,
  raw: Record<string, unknown>,
  /** Opens the credential's current secrets (after the request is checked against its kind). */
  openSecret: (c: VaultCredentialRecord) => CredentialSecret,
): { auth: VaultCredentialRecord["auth"]; secret: CredentialSecret } {
  const where = "auth";
  if (raw.type !== c.auth.type) {
    throw badRequest(
      `'${where}.type' must be the credential's own (${c.auth.type}): create a new credential to change it`,
      `${where}.type`,
    );
  }
  const secret = openSecret(c);
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
