import type { Application } from "../../application/index.js";
import { dialectPlugin } from "../../http/app-types.js";
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
export const openaiPlugin = (ops: Application) =>
  dialectPlugin("openai", (app) => {
    agentRoutes(app, ops);
    sessionRoutes(app, ops);
    historyRoutes(app, ops);
    artifactRoutes(app, ops);
    goalRoutes(app, ops);
    environmentRoutes(app, ops);
    vaultRoutes(app, ops);
    automationRoutes(app, ops);
    // (served whatever the dialect header: the SDK's webhook methods send none)
    webhookRoutes(app, ops);
    // (served whatever the dialect header, too: the SDK's Files API methods send none)
    fileRoutes(app, ops);
    checkpointRoutes(app, ops, "openai");
    repositoryRoutes(app, ops.repositories);
  });
