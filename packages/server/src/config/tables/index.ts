/**
 * Every option table, in the order of the usage text (and of reading: a bad value of an earlier row is reported
 * first). Adding an option: one row in its area's table. Adding an area: a table file and one entry here.
 */
import { automations } from "./automations.js";
import { checkpoints } from "./checkpoints.js";
import { engine } from "./engine.js";
import { environments } from "./environments.js";
import { files } from "./files.js";
import { goals } from "./goals.js";
import { logging } from "./logging.js";
import { model } from "./model.js";
import { repositories } from "./repositories.js";
import { sandboxes } from "./sandboxes.js";
import { security } from "./security.js";
import { server } from "./server.js";
import { sessions } from "./sessions.js";
import { storage } from "./storage.js";
import { vaults } from "./vaults.js";
import { webhooks } from "./webhooks.js";

export const TABLES = [
  server,
  storage,
  model,
  security,
  webhooks,
  automations,
  sessions,
  engine,
  sandboxes,
  logging,
  goals,
  checkpoints,
  environments,
  repositories,
  files,
  vaults,
] as const;
