/**
 * The token an MCP server credential gives out: a static bearer token as stored, or an `mcp_oauth` access token,
 * refreshed first (its refresh token, at its token endpoint: oauth.ts) when it expires within two minutes. One
 * refresh at a time per credential: callers that arrive meanwhile wait for it. A failed refresh is logged and the
 * stored access token is given out.
 */
import type { Logger } from "pino";
import type { Clock } from "../../kernel/clock.js";
import type { OutboundGuard } from "../../platform/net/outbound-guard.js";
import type { Store, VaultCredentialRecord } from "../../store/types.js";
import type { CredentialSecret } from "./credential-input.js";
import { OAuthRefreshError, refreshAccessToken } from "./oauth.js";

/** A token that expires within this many seconds is refreshed before it is given out. */
const REFRESH_MARGIN_SECONDS = 120;

export class TokenRefresher {
  /** Refreshes in flight per credential (one at a time). */
  private readonly refreshing = new Map<string, Promise<string>>();

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      logger: Logger;
      /** Where token endpoints may be (the service POSTs to them itself). */
      outbound: OutboundGuard;
      /** A credential's secrets, opened. */
      openSecret: (c: VaultCredentialRecord) => CredentialSecret;
      /** A credential's secrets, sealed for its row. */
      seal: (id: string, secret: CredentialSecret) => string;
    },
  ) {}

  /** The token to send: a static bearer token, or an OAuth access token refreshed when it is about to expire. */
  async currentToken(c: VaultCredentialRecord): Promise<string> {
    const secret = this.deps.openSecret(c);
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
        secret: this.deps.seal(c.id, next),
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
}
