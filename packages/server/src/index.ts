export { type AppDeps, buildApp } from "./app.js";
export { type Config, loadConfig } from "./config.js";
export { createLogger, type Service, startService } from "./service.js";
