export { buildApp } from "./app.js";
export { type Config, loadConfig } from "./config.js";
export { type Core, createCore } from "./core.js";
export { engineConfigToml, PERMISSION_PROFILE } from "./engine/codex-home.js";
export { createLogger, type Service, type ServiceOptions, startService } from "./service.js";
export { SqliteStore } from "./store/sqlite/index.js";
export type * from "./store/types.js";
