import type { AppDeps } from "../../app.js";
import type { Handlers } from "../routes.js";
import { openaiAgentHandlers } from "./agents.js";
import { openaiArtifactHandlers } from "./artifacts.js";
import { openaiHistoryHandlers } from "./history.js";
import { openaiSessionHandlers } from "./sessions.js";

/** The official OpenAI Agents API wire format (requests carrying `OpenAI-Beta: agents=v1`). */
export function openaiHandlers(deps: AppDeps): Handlers {
  return {
    ...openaiAgentHandlers(deps),
    ...openaiSessionHandlers(deps),
    ...openaiHistoryHandlers(deps),
    ...openaiArtifactHandlers(deps),
  };
}
