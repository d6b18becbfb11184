/**
 * The engines as the turn runner leases them, with what a session's environment and vaults add to its engine
 * thread on every start and resume (the engine keeps none of it):
 * - a session whose environment is being prepared waits for it (at most the turn timeout) before its thread is
 *   started; a failed environment fails the turn with `environment_failed` and the failure's message;
 * - the environment's variables and the session's environment-variable credentials are the commands' variables
 *   (`shell_environment_policy.set`, never in the engine's files);
 * - an MCP server without its own Authorization gets the one credential of the session's vaults whose server URL
 *   is its own (`http_headers.Authorization`), refreshed first when it is an OAuth token about to expire;
 * - every value handed out is redacted from what the session's log stores from then on (redaction.ts);
 * - every HTTP MCP server's URL is checked by the outbound guard again, its name resolved now (the engine resolves
 *   and connects itself: this is the last moment the service can refuse a name that now resolves to a private
 *   address, or a URL stored before the guard or under another operator setting); a refused one fails the turn
 *   with `mcp_server_refused` before anything is sent.
 * Once the thread is bound, a ready environment becomes `connected`.
 */
import type { ThreadOptions } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import { isRecord } from "../../kernel/is-record.js";
import { EnginesDecorator } from "../../platform/engine/decorator.js";
import type { Engines, Lease, LeaseOptions, SecretSubstitution } from "../../platform/engine/types.js";
import { type OutboundGuard, TargetRefused } from "../../platform/net/outbound-guard.js";
import type { EnvironmentRecord, SessionRecord } from "../../store/types.js";
import { HookFailure } from "../feature.js";
import { placeheld } from "../sandboxes/secrets.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import {
  derivedThreadOptions,
  sessionOfThreadOptions,
  withCommandVariables,
} from "../turns/thread-options.js";
import type { VaultService } from "../vaults/service.js";
import { normaliseServerUrl } from "../vaults/urls.js";
import type { SecretRedactor } from "./redaction.js";
import { type EnvironmentService, sessionVaults } from "./service.js";

export interface SessionEnginesDeps {
  environments: EnvironmentService;
  vaults: VaultService;
  redactor: SecretRedactor;
  logger: Logger;
  /** Where HTTP MCP servers may be. */
  outbound: OutboundGuard;
  /** The longest a turn waits for its environment (ms). */
  waitMs: number;
}

/** Where a session's turn being stopped is announced (the runner). */
export interface TurnStopper {
  onStop(listener: (sessionId: string) => void): void;
}

export class SessionEngines extends EnginesDecorator {
  /** Turns waiting for their environment, by session: a stopped turn stops waiting. */
  private readonly waits = new Map<string, AbortController>();

  constructor(
    inner: Engines,
    private readonly deps: SessionEnginesDeps,
  ) {
    super(inner);
  }

  async lease(threadId: string | null, options: ThreadOptions, opts?: LeaseOptions): Promise<Lease> {
    const session = sessionOfThreadOptions(options);
    if (!session) return this.inner.lease(threadId, options, opts);
    const checked = await this.withCheckedMcpServers(options);
    const env = await this.environmentOf(session);
    const { options: augmented, substitutions } = await this.withSecrets(session, env, checked);
    const lease = await this.inner.lease(
      threadId,
      augmented,
      substitutions.length > 0 ? { ...opts, substitutions } : opts,
    );
    if (env) {
      await this.deps.environments
        .connected(session.id, env, session.active_turn_id)
        .catch((err: unknown) =>
          this.deps.logger.error({ session: session.id, err: String(err) }, "environment status not stored"),
        );
    }
    return lease;
  }

  /** The session's environment once prepared (null: it has none); a turn cannot run without it. */
  private async environmentOf(session: SessionRecord): Promise<EnvironmentRecord | null> {
    const id = session.extra.environment_id;
    if (typeof id !== "string") return null;
    const waiting = new AbortController();
    this.waits.set(session.id, waiting);
    let env: EnvironmentRecord | undefined;
    try {
      env = await this.deps.environments.settled(session.id, id, this.deps.waitMs, waiting.signal);
    } finally {
      if (this.waits.get(session.id) === waiting) this.waits.delete(session.id);
    }
    if (waiting.signal.aborted) {
      throw new HookFailure("cancelled", "The turn was stopped while its environment was being prepared.");
    }
    if (!env) throw new HookFailure("environment_missing", `The session's environment ${id} is gone.`);
    switch (env.status) {
      case "pending":
        throw new HookFailure(
          "environment_not_ready",
          `The session's environment ${id} is still being prepared: send the input again once it is ready.`,
        );
      case "failed":
        throw new HookFailure(
          "environment_failed",
          `The session's environment ${id} failed (${env.error?.code ?? "unknown"}): ${env.error?.message ?? ""}`,
        );
      case "expired":
        throw new HookFailure("environment_expired", `The session's environment ${id} has expired.`);
      default:
        return env;
    }
  }

  /**
   * The options with every HTTP MCP server's URL checked now and given to the engine as checked (its normalised
   * form: the engine parses no other text than the one the guard read).
   */
  private async withCheckedMcpServers(options: ThreadOptions): Promise<ThreadOptions> {
    const config = options.config;
    if (!isRecord(config) || !isRecord(config.mcp_servers)) return options;
    const servers: Record<string, unknown> = {};
    for (const [label, raw] of Object.entries(config.mcp_servers)) {
      if (!isRecord(raw) || typeof raw.url !== "string") {
        servers[label] = raw;
        continue;
      }
      let url: URL;
      try {
        url = new URL(raw.url);
        await this.deps.outbound.checkResolved(url);
      } catch (err) {
        const why = err instanceof TargetRefused ? err.message : `its URL is not valid (${raw.url})`;
        throw new HookFailure("mcp_server_refused", `MCP server ${label} is refused: ${why}`);
      }
      servers[label] = { ...raw, url: url.href };
    }
    return derivedThreadOptions(options, { ...options, config: { ...config, mcp_servers: servers } });
  }

  /** The options with the environment's variables and the vaults' credentials added (a copy). */
  private async withSecrets(
    session: SessionRecord,
    env: EnvironmentRecord | null,
    options: ThreadOptions,
  ): Promise<{ options: ThreadOptions; substitutions: SecretSubstitution[] }> {
    const vaultIds = [...new Set([...sessionVaults(session), ...(env?.vault_ids ?? [])])];
    const variables = env ? await this.deps.environments.threadVariables(env) : {};
    if (vaultIds.length === 0 && Object.keys(variables).length === 0) return { options, substitutions: [] };
    const creds = await this.deps.vaults.forSession(session.project_id, vaultIds);
    // In a sandbox, credentials are placeholders its egress endpoint replaces (their values never enter it).
    const held = sandboxIdOf(session) ? placeheld(creds.envCredentials) : null;
    // (The environment's own variables win over a credential of the same name.)
    const withVariables = withCommandVariables(options, {
      over: { ...(held ? held.env : creds.env), ...variables },
    });
    const config: Record<string, unknown> = { ...withVariables.config };
    if (isRecord(config.mcp_servers)) {
      const servers: Record<string, unknown> = {};
      for (const [label, raw] of Object.entries(config.mcp_servers)) {
        servers[label] = this.authorised(label, raw, creds.mcp);
      }
      config.mcp_servers = servers;
    }
    this.deps.redactor.remember(session.id, [...Object.values(variables), ...creds.values]);
    return {
      options: derivedThreadOptions(options, { ...withVariables, config }),
      substitutions: held?.substitutions ?? [],
    };
  }

  /** An HTTP MCP server with the credential matching its URL, unless it has its own Authorization. */
  private authorised(label: string, raw: unknown, mcp: Map<string, string | Error>): unknown {
    if (!isRecord(raw) || typeof raw.url !== "string") return raw;
    const headers = isRecord(raw.http_headers) ? raw.http_headers : {};
    if (Object.keys(headers).some((h) => h.toLowerCase() === "authorization")) return raw;
    const url = normaliseServerUrl(raw.url);
    const match = url ? mcp.get(url) : undefined;
    if (match === undefined) return raw;
    if (match instanceof Error) {
      throw new HookFailure("mcp_credential_ambiguous", `MCP server ${label}: ${match.message}`);
    }
    return { ...raw, http_headers: { ...headers, Authorization: match } };
  }

  /**
   * Makes every stop of a turn that waits for its environment (a cancel, the turn timeout, a deletion, the
   * shutdown) end that wait at once (the turn then ends as stopped), instead of when the preparation ends.
   */
  stopWaitsOn(runner: TurnStopper): void {
    runner.onStop((sessionId) => this.waits.get(sessionId)?.abort());
  }
}
