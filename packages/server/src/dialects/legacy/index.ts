import { dialectPlugin } from "../../http/app-types.js";
import type { Core } from "../../main/compose.js";
import { artifactListRoutes } from "../openai/artifacts.js";
import { turnRoutes } from "../openai/history.js";
import { checkpointRoutes } from "../shared/checkpoints.js";
import { goalRoutes } from "../shared/goal.js";
import { agentRoutes } from "./agents.js";
import { artifactRoutes } from "./artifacts.js";
import { sessionRoutes } from "./sessions.js";

/**
 * The original service's wire format (the seed e2e contract), for requests without `OpenAI-Beta: agents=v1`.
 * Routes the template never had (turns, artifact lists and contents) answer in the official format.
 */
export const templatePlugin = (core: Core) =>
  dialectPlugin("template", (app) => {
    agentRoutes(app, core);
    sessionRoutes(app, core);
    artifactRoutes(app, core);
    goalRoutes(app, core);
    turnRoutes(app, core);
    artifactListRoutes(app, core);
    checkpointRoutes(app, core, "template");
  });
