/**
 * Environments made ahead of a session (`environments.create`): the request is checked whole — its spec, its vaults
 * (the caller's), what the operator allows — before anything is made, so that a refused one leaves nothing behind
 * and an idempotent retry meets the same answer.
 */
import type { EnvironmentPlan, EnvironmentService } from "../domain/environments/service.js";
import { HostedEnvironmentParam, parseWith } from "../domain/environments/spec.js";
import type { VaultService } from "../domain/vaults/service.js";
import { badRequest } from "../kernel/errors.js";
import type { Scope } from "../model/scope.js";

export async function planAhead(
  deps: { environments: EnvironmentService; vaults: Pick<VaultService, "checkVaultIds"> },
  scope: Scope,
  raw: unknown,
  vaultIds: readonly string[] | null | undefined,
): Promise<EnvironmentPlan> {
  const hosted = parseWith(HostedEnvironmentParam, raw, "environment");
  if (hosted.environment_id !== undefined) {
    throw badRequest(
      "'environment.environment_id' is for sessions (it attaches an existing environment)",
      "environment.environment_id",
    );
  }
  const checked = await deps.vaults.checkVaultIds(scope, vaultIds, "vault_ids");
  return deps.environments.plan(scope, hosted, checked, "environment");
}
