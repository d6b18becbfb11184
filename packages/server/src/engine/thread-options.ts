import type { ThreadOptions } from "@codex-agent-api/codex";
import type { Config } from "../config.js";
import type { SessionRecord } from "../store/types.js";

/** How a session's engine thread is started or resumed: its cwd, model, sandbox and instructions. */
export function threadOptionsFor(session: SessionRecord, config: Config): ThreadOptions {
  return {
    cwd: session.workspace,
    model: session.model,
    sandbox: config.sandbox,
    approvalPolicy: "never",
    ...(session.instructions ? { developerInstructions: session.instructions } : {}),
  };
}
