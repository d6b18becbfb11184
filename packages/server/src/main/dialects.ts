/**
 * The dialect plugins the app serves, in registration order (the order of the OpenAPI documents), and the routes of
 * the official dialect the legacy one borrows: turns and artifact lists/contents, which the template never had,
 * answer in the official format on legacy requests too.
 */

import type { Application } from "../application/index.js";
import { legacyPlugin } from "../dialects/legacy/index.js";
import { artifactListRoutes } from "../dialects/openai/artifacts.js";
import { turnRoutes } from "../dialects/openai/history.js";
import { openaiPlugin } from "../dialects/openai/index.js";

export const dialectPlugins = (ops: Application) => [
  openaiPlugin(ops),
  legacyPlugin(ops, (app) => {
    turnRoutes(app, ops);
    artifactListRoutes(app, ops);
  }),
];
