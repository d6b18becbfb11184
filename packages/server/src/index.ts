export { buildApp, type AppDeps } from "./app.js";
export { type Config, loadConfig } from "./config.js";
export { startService, type Service, createLogger } from "./service.js";
