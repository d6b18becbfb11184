/**
 * Environments prepared in the background (provision.ts does the preparing): the credentials of the environment's
 * and its session's vaults are opened for it (placeholders in a sandbox), every secret value is redacted from what
 * the preparation reports, and the outcome is the environment's status (ready, or failed with why) unless its
 * status changed meanwhile. A shutdown stops the preparations running here and waits for them (their environments
 * fail as they would at the next start); the next start fails those a shutdown left pending.
 */
import { join } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import { InFlight } from "../../kernel/in-flight.js";
import type { EnvironmentError, EnvironmentRecord, Store } from "../../store/types.js";
import type { RepositoryService } from "../repositories/service.js";
import { placeheld } from "../sandboxes/secrets.js";
import type { VaultService } from "../vaults/service.js";
import type { Provisioner, ProvisionResult } from "./provision.js";
import { redactValues } from "./redaction.js";
import type { EnvironmentSpec } from "./spec.js";
import type { EnvironmentStatuses } from "./status.js";

/** Why an environment whose preparation a shutdown cut short has failed. */
const STOPPED_WHILE_PREPARING: EnvironmentError = {
  code: "server_restart",
  message: "The server stopped while this environment was being prepared: create a new one.",
  type: "environment_error",
};

export interface PreparationDeps {
  store: Store;
  logger: Logger;
  config: Config;
  vaults: VaultService;
  provisioner: Provisioner;
  repositories: RepositoryService;
  statuses: EnvironmentStatuses;
}

/** The session an environment's status is logged on (none while it is only reserved for one). */
const loggedOn = (env: EnvironmentRecord): string | null =>
  env.session_id && !env.session_id.startsWith("reserved:") ? env.session_id : null;

export class Preparations {
  private closing = false;
  /** Preparations running in the background, and their environments' ids. */
  private readonly preparing = new InFlight();
  private readonly preparingIds = new Set<string>();

  constructor(private readonly deps: PreparationDeps) {}

  /** Starts preparing the environment (its commands run in `sandboxId`'s container, or on this host: null). */
  start(
    env: EnvironmentRecord,
    spec: EnvironmentSpec,
    sessionVaultIds: string[],
    sandboxId: string | null,
  ): void {
    if (this.closing) return; // stays pending: the next start fails it (recover)
    this.preparingIds.add(env.id);
    const work = (async () => {
      let result: ProvisionResult;
      let secretValues: string[] = Object.values(spec.env);
      try {
        const creds = await this.deps.vaults.forSession(env.project_id, [
          ...new Set([...env.vault_ids, ...sessionVaultIds]),
        ]);
        secretValues = [...secretValues, ...creds.values];
        // In a sandbox, credentials are placeholders (domain/sandboxes/secrets.ts).
        const held = sandboxId ? placeheld(creds.envCredentials) : null;
        result = await this.deps.provisioner.run({
          id: env.id,
          directory: env.directory,
          spec,
          extraEnv: held ? held.env : creds.env,
          substitutions: held?.substitutions ?? [],
          redact: (text) => redactValues(text, secretValues),
          checkout:
            spec.repositories.length > 0
              ? () => this.deps.repositories.checkout(env, spec.repositories)
              : null,
          logFile: join(this.deps.config.dataDir, "environments", env.id, "setup.log"),
          sandboxId,
        });
      } catch (err) {
        result = {
          ok: false,
          error: {
            code: "internal_error",
            message: redactValues(String(err), secretValues),
            type: "environment_error",
          },
        };
      }
      const current = await this.deps.store.getEnvironment(env.id);
      if (!current || current.status !== "pending") return;
      // Cut short by the shutdown: what a restart would say (not the cancellation's own message).
      const error = result.ok ? null : this.closing ? STOPPED_WHILE_PREPARING : result.error;
      await this.deps.statuses.set(current, loggedOn(current), error ? "failed" : "ready", error, null);
    })()
      .catch((err: unknown) =>
        this.deps.logger.error(
          { environment: env.id, err: String(err) },
          "environment status could not be stored",
        ),
      )
      .finally(() => this.preparingIds.delete(env.id));
    void this.preparing.track(work);
  }

  /** Stops the preparations running here and waits for them: nothing writes to their directories or logs after. */
  async close(): Promise<void> {
    this.closing = true;
    for (const id of this.preparingIds) this.deps.provisioner.cancel(id);
    await this.preparing.idle();
  }

  /** Start-up: environments whose preparation was cut short by the last shutdown have failed. */
  async recover(): Promise<number> {
    // With several instances, another may be preparing them (an environment of a dead instance stays pending:
    // turns waiting for it fail when their wait ends).
    if (!this.single()) return 0;
    const pending = await this.deps.store.listPendingEnvironments(10_000);
    let n = 0;
    for (const env of pending) {
      await this.deps.statuses.set(env, loggedOn(env), "failed", STOPPED_WHILE_PREPARING, null);
      n++;
    }
    return n;
  }

  private single(): boolean {
    return this.deps.config.databaseUrl === null;
  }
}
