/**
 * What a new session's official `environment` gives it, decided before anything is made: `none`; `self_hosted` (its
 * own directory under the workspace root as ever, or an allowed `workspace_directory`); `openai_hosted` inline (a new
 * environment, prepared here in the background once the session exists) or with `environment_id` (one made ahead:
 * reserved now, attached once the session exists, given back if it cannot be made).
 */
import { join } from "node:path";
import type { ContainerSize } from "@codex-agent-api/sandbox";
import type { EnvironmentPlan, EnvironmentService } from "../domain/environments/service.js";
import { HostedEnvironmentParam, parseWith } from "../domain/environments/spec.js";
import type { WorkspaceMode } from "../domain/sessions/service.js";
import { newObjectId } from "../domain/vaults/service.js";
import { badRequest } from "../kernel/errors.js";
import type { SessionRecord } from "../model/records.js";
import type { Scope } from "../model/scope.js";

/** The `environment` of a session create, as the client sent it (null or absent: none given). */
export type EnvironmentParam = ({ type: string } & Record<string, unknown>) | null | undefined;

/** What a new session's `environment` gives it: fields of its record, where it works, what follows its creation. */
export interface EnvironmentChoice {
  extra: Record<string, unknown>;
  workspace: WorkspaceMode | null;
  directory: string | null;
  /** The sandbox that holds `directory` (an environment made ahead, on the container backend). */
  sandboxId?: string;
  /** The official `container_size` of a new environment's sandbox. */
  size?: ContainerSize | null;
  /** The session exists: its environment is attached or made (and prepared in the background). */
  created(session: SessionRecord): Promise<void>;
  /** The session could not be made: give back what was reserved for it. */
  abandoned(): Promise<void>;
}

export interface EnvironmentChoiceDeps {
  environments: EnvironmentService;
  workspaceRoot: string;
  /** The container backend: an environment made ahead has a sandbox of its own (its id is the environment's). */
  containers: boolean;
}

const nothing = async () => undefined;

export async function chooseEnvironment(
  deps: EnvironmentChoiceDeps,
  scope: Scope,
  raw: EnvironmentParam,
  vaultIds: string[],
): Promise<EnvironmentChoice> {
  const { environments } = deps;
  const base = {
    extra: { vault_ids: vaultIds },
    workspace: null,
    directory: null,
    created: nothing,
    abandoned: nothing,
  };
  if (raw?.type === "none") return { ...base, extra: { ...base.extra, environment: "none" } };
  // (no environment: this server's workspace, as a self-hosted environment, as ever)
  if (!raw || raw.type === "self_hosted") {
    const directory = environments.selfHostedDirectory(
      raw?.workspace_directory,
      "environment.workspace_directory",
    );
    return {
      ...base,
      // A directory the client chose is where its files are, to it too (environment-paths.ts).
      extra: {
        ...base.extra,
        environment: "self_hosted",
        ...(directory ? { workspace_directory: directory } : {}),
      },
      ...(directory ? { workspace: "shared" as const, directory } : {}),
    };
  }
  const hosted = parseWith(HostedEnvironmentParam, raw, "environment");
  if (hosted.environment_id !== undefined) {
    const extra = Object.keys(hosted).filter((k) => k !== "type" && k !== "environment_id");
    if (extra.length > 0) {
      throw badRequest(
        `'environment': an environment_id attaches an existing environment; ${extra.join(", ")} cannot be given with it`,
        `environment.${extra[0]}`,
      );
    }
    const env = await environments.reserve(scope, hosted.environment_id, "environment.environment_id");
    return {
      extra: { ...environments.attachedFields(env), vault_ids: vaultIds },
      workspace: "session",
      directory: env.directory,
      ...(deps.containers ? { sandboxId: env.id } : {}),
      created: (session) => environments.attach(env, session),
      abandoned: () => environments.release(env.id),
    };
  }
  const plan: EnvironmentPlan = await environments.plan(scope, hosted, [], "environment");
  const id = newObjectId("env_");
  const directory = join(deps.workspaceRoot, id);
  const fields = environments.sessionFields(id, plan, directory);
  return {
    extra: { ...fields, vault_ids: vaultIds },
    workspace: "session",
    directory,
    size: plan.size,
    created: async (session) => {
      await environments.createForSession(scope, session, fields, plan);
    },
    abandoned: nothing,
  };
}
