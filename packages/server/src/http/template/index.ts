import type { AppDeps } from "../../app.js";
import type { Handlers } from "../routes.js";
import { templateAgentHandlers } from "./agents.js";
import { templateArtifactHandlers } from "./artifacts.js";
import { templateSessionHandlers } from "./sessions.js";

/** The original service's wire format (the seed e2e contract). */
export function templateHandlers(deps: AppDeps): Handlers {
  return {
    ...templateAgentHandlers(deps),
    ...templateSessionHandlers(deps),
    ...templateArtifactHandlers(deps),
  };
}
