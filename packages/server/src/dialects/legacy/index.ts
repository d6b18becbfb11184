import type { Application } from "../../application/index.js";
import { type App, dialectPlugin } from "../../http/app-types.js";
import { checkpointRoutes } from "../shared/checkpoints.js";
import { goalRoutes } from "../shared/goal.js";
import { repositoryRoutes } from "../shared/repositories.js";
import { agentRoutes } from "./agents.js";
import { artifactRoutes } from "./artifacts.js";
import { sessionRoutes } from "./sessions.js";

/**
 * The original service's wire format (the seed e2e contract), for requests without `OpenAI-Beta: agents=v1` (wire
 * name "template"). Routes the template never had (turns, artifact lists and contents) answer in the official
 * format: `borrowed` registers them (main/dialects.ts says which), so this dialect imports nothing of the other.
 */
export const legacyPlugin = (ops: Application, borrowed: (app: App) => void) =>
  dialectPlugin("template", (app) => {
    agentRoutes(app, ops);
    sessionRoutes(app, ops);
    artifactRoutes(app, ops);
    goalRoutes(app, ops);
    borrowed(app);
    checkpointRoutes(app, ops, "template");
    repositoryRoutes(app, ops.repositories);
  });
