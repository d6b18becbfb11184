export { type Config, loadConfig } from "./config/load.js";
export { buildApp } from "./main/app.js";
export { type Core, createCore } from "./main/compose.js";
export { createLogger, type Service, type ServiceOptions, startService } from "./main/service.js";
export { engineConfigToml, PERMISSION_PROFILE } from "./platform/engine/codex-home.js";
export { SqliteStore } from "./store/sqlite/index.js";
export type * from "./store/types.js";
