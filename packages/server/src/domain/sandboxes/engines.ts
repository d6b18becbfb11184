/**
 * The engines as a sandboxed session's turns lease them: before its thread is started or resumed, its sandbox is
 * found (adopted after a restart: a new executor URL and token), its egress endpoint set to the session's network
 * policy and the secrets its placeholders stand for (`LeaseOptions.substitutions`), and its executor handed to the engine process that will hold the thread (`environment/add`).
 * The thread's options already name the environment (domain/turns/thread-options.ts); this decorator makes it exist.
 * A session without a sandbox passes straight through.
 */
import type { ThreadOptions } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import { EnginesDecorator } from "../../platform/engine/decorator.js";
import type { Engines, Lease, LeaseOptions } from "../../platform/engine/types.js";
import type { Sandboxes, SandboxNetwork } from "../../platform/sandbox/sandboxes.js";
import type { SessionRecord } from "../../store/types.js";
import { HookFailure } from "../feature.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import { sessionOfThreadOptions, withCommandVariables } from "../turns/thread-options.js";

export interface SandboxEnginesDeps {
  sandboxes: Sandboxes;
  /** What the session's sandbox may reach. */
  networkOf(session: SessionRecord): Promise<SandboxNetwork>;
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
    const sandbox = await this.deps.sandboxes.get(id, {
      network: await this.deps.networkOf(session),
      secrets: { headers: [], substitutions: opts.substitutions ?? [] },
    });
    if (!sandbox) {
      throw new HookFailure(
        "sandbox_missing",
        `The session's sandbox ${id} is gone (its container and workspace volume were removed outside the service).`,
      );
    }
    const { environmentId, url, token } = sandbox.executor;
    // The engine sends each command's whole environment: the sandbox's own variables go with it.
    return this.inner.lease(threadId, withCommandVariables(options, { under: sandbox.env }), {
      ...opts,
      environments: [
        ...(opts.environments ?? []),
        { environmentId, execServerUrl: url, authBearerToken: token },
      ],
    });
  }
}
