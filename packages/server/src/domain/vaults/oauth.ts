/**
 * Refreshing an OAuth access token (RFC 6749 §6): `grant_type=refresh_token` to the credential's token endpoint,
 * the client authenticated as configured (none: client_id in the body; client_secret_basic: HTTP Basic;
 * client_secret_post: id and secret in the body), `resource` (RFC 8707) and `scope` when configured. The request
 * goes through the outbound guard's fetch (platform/net/outbound-guard.ts: a public address checked when connecting, no
 * redirects), the only one the service uses.
 */

import { isUnixSeconds } from "../../kernel/unix-seconds.js";
import type { GuardedRequest, GuardedResponse } from "../../platform/net/outbound-guard.js";

export interface RefreshRequest {
  token_endpoint: string;
  client_id: string;
  auth: "none" | "client_secret_basic" | "client_secret_post";
  client_secret: string | null;
  refresh_token: string;
  resource: string | null;
  scope: string | null;
}

export interface RefreshedToken {
  access_token: string;
  /** Unix seconds; null when the server did not say. */
  expires_at: number | null;
  /** A new refresh token, when the server rotated it. */
  refresh_token: string | null;
}

export class OAuthRefreshError extends Error {}

/** How the request is sent: the outbound guard's fetch (or a stand-in in tests). */
export type RefreshFetch = (url: string, init: GuardedRequest) => Promise<GuardedResponse>;

const form = (v: string) => encodeURIComponent(v).replace(/%20/g, "+");

export async function refreshAccessToken(
  r: RefreshRequest,
  now: number,
  fetchFn: RefreshFetch,
): Promise<RefreshedToken> {
  const body = new URLSearchParams({ grant_type: "refresh_token", refresh_token: r.refresh_token });
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  if (r.auth === "client_secret_basic") {
    headers.authorization = `Basic ${Buffer.from(`${form(r.client_id)}:${form(r.client_secret ?? "")}`).toString("base64")}`;
  } else {
    body.set("client_id", r.client_id);
    if (r.auth === "client_secret_post") body.set("client_secret", r.client_secret ?? "");
  }
  if (r.resource) body.set("resource", r.resource);
  if (r.scope) body.set("scope", r.scope);
  let res: GuardedResponse;
  try {
    res = await fetchFn(r.token_endpoint, {
      method: "POST",
      headers,
      body: body.toString(),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    // (fetch says "fetch failed"; why is in its cause: a refused address, a refused connection, a redirect…)
    const cause = (err as Error).cause;
    const why = cause instanceof Error ? cause.message : (err as Error).message;
    throw new OAuthRefreshError(`the token endpoint could not be reached: ${why}`);
  }
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = {};
  }
  if (!res.ok) {
    // (The error code only: a token endpoint's error body is not logged whole.)
    const code = typeof json.error === "string" ? json.error : `HTTP ${res.status}`;
    throw new OAuthRefreshError(`the token endpoint refused the refresh: ${code}`);
  }
  if (typeof json.access_token !== "string" || json.access_token === "") {
    throw new OAuthRefreshError("the token endpoint's answer has no access_token");
  }
  const expiresIn = typeof json.expires_in === "number" ? json.expires_in : Number(json.expires_in);
  // An expiry past what a time can be (a huge expires_in) is no known expiry, not an error that drops the token.
  const expiresAt = Number.isFinite(expiresIn) && expiresIn > 0 ? Math.floor(now + expiresIn) : null;
  return {
    access_token: json.access_token,
    expires_at: expiresAt !== null && isUnixSeconds(expiresAt) ? expiresAt : null,
    refresh_token: typeof json.refresh_token === "string" && json.refresh_token ? json.refresh_token : null,
  };
}
