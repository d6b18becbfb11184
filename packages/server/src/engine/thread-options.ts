import type { ThreadOptions } from "@codex-agent-api/codex";
import type { Config } from "../config.js";
import type { SessionRecord } from "../store/types.js";
import { isolated, PERMISSION_PROFILE } from "./codex-home.js";

/**
 * How a session's engine thread is started or resumed: its cwd (the only place its commands may read and write,
 * under the engine's permission profile from config.toml — a `sandbox` here would replace that profile), model,
 * instructions, and the commands' HOME (the workspace, so tools that write to ~ work inside the sandbox).
 */
export function threadOptionsFor(session: SessionRecord, config: Config): ThreadOptions {
  return {
    cwd: session.workspace,
    model: session.model,
    ...(isolated(config) ? {} : { sandbox: config.sandbox }),
    approvalPolicy: "never",
    config: {
      shell_environment_policy: { set: { HOME: session.workspace } },
      // Also per thread (sent again on every resume): a thread first started elsewhere, or under an older
      // configuration, runs under the profile from now on.
      ...(isolated(config) ? { default_permissions: PERMISSION_PROFILE } : {}),
    },
    ...(session.instructions ? { developerInstructions: session.instructions } : {}),
  };
}
