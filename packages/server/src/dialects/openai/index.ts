import { dialectPlugin } from "../../http/app-types.js";
import type { Core } from "../../main/compose.js";
import { checkpointRoutes } from "../shared/checkpoints.js";
import { goalRoutes } from "../shared/goal.js";
import { repositoryRoutes } from "../shared/repositories.js";
import { agentRoutes } from "./agents.js";
import { artifactRoutes } from "./artifacts.js";
import { automationRoutes } from "./automations.js";
import { environmentRoutes } from "./environments.js";
import { fileRoutes } from "./files.js";
import { historyRoutes } from "./history.js";
import { sessionRoutes } from "./sessions.js";
import { vaultRoutes } from "./vaults.js";
import { webhookRoutes } from "./webhooks.js";

/** The official OpenAI Agents API wire format (requests carrying `OpenAI-Beta: agents=v1`). */
export const openaiPlugin = (core: Core) =>
  dialectPlugin("openai", (app) => {
    agentRoutes(app, core);
    sessionRoutes(app, core);
    historyRoutes(app, core);
    artifactRoutes(app, core);
    goalRoutes(app, core);
    environmentRoutes(app, core);
    vaultRoutes(app, core);
    automationRoutes(app, core);
    // (served whatever the dialect header: the SDK's webhook methods send none)
    webhookRoutes(app, core);
    // (served whatever the dialect header, too: the SDK's Files API methods send none)
    fileRoutes(app, core);
    checkpointRoutes(app, core, "openai");
    repositoryRoutes(app, core.repositoryOps);
  });
