/**
 * The engines as a sandboxed session's turns lease them: before its thread is started or resumed, its sandbox is
 * found (adopted after a restart: a new executor URL and token), its egress endpoint set to the session's network
 * policy and secrets, and its executor handed to the engine process that will hold the thread (`environment/add`).
 * The thread's options already name the environment (domain/turns/thread-options.ts); this decorator makes it exist.
 * A session without a sandbox passes straight through.
 */
import type { ThreadOptions } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import { EnginesDecorator } from "../../platform/engine/decorator.js";
import type { Engines, Lease, LeaseOptions } from "../../platform/engine/types.js";
import type { Sandboxes, SandboxNetwork, SandboxSecrets } from "../../platform/sandbox/sandboxes.js";
import type { SessionRecord } from "../../store/types.js";
import { HookFailure } from "../feature.js";
import { derivedThreadOptions, sandboxIdOf, sessionOfThreadOptions } from "../turns/thread-options.js";

export interface SandboxPolicy {
  network: SandboxNetwork;
  secrets: SandboxSecrets;
}

export interface SandboxEnginesDeps {
  sandboxes: Sandboxes;
  /** What the session's sandbox may reach, and the secrets its proxy holds for it. */
  policyOf(session: SessionRecord): Promise<SandboxPolicy>;
  logger: Logger;
}

export class SandboxEngines extends EnginesDecorator {
  constructor(
    inner: Engines,
    private readonly deps: SandboxEnginesDeps,
  ) {
    super(inner);
  }

  async lease(threadId: string | null, options: ThreadOptions, opts: LeaseOptions = {}): Promise<Lease> {
    const session = sessionOfThreadOptions(options);
    const id = session ? sandboxIdOf(session) : null;
    if (!session || !id) return this.inner.lease(threadId, options, opts);
    const policy = await this.deps.policyOf(session);
    const sandbox = await this.deps.sandboxes.get(id, {
      network: policy.network,
      secrets: {
        headers: policy.secrets.headers,
        substitutions: [...policy.secrets.substitutions, ...(opts.substitutions ?? [])],
      },
    });
    if (!sandbox) {
      throw new HookFailure(
        "sandbox_missing",
        `The session's sandbox ${id} is gone (its container and workspace volume were removed outside the service).`,
      );
    }
    const { environmentId, url, token } = sandbox.executor;
    // The engine sends each command's whole environment: the sandbox's own variables go with it.
    return this.inner.lease(threadId, withCommandEnv(options, sandbox.env), {
      ...opts,
      environments: [
        ...(opts.environments ?? []),
        { environmentId, execServerUrl: url, authBearerToken: token },
      ],
    });
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The options with the sandbox's variables under the session's own (`shell_environment_policy.set`). */
function withCommandEnv(options: ThreadOptions, env: Record<string, string>): ThreadOptions {
  const config: Record<string, unknown> = { ...options.config };
  const policy = isRecord(config.shell_environment_policy) ? config.shell_environment_policy : {};
  const set = isRecord(policy.set) ? policy.set : {};
  config.shell_environment_policy = { ...policy, set: { ...env, ...set } };
  return derivedThreadOptions(options, { ...options, config });
}
