export { type AppDeps, buildApp } from "./app.js";
export { type Config, loadConfig } from "./config.js";
export { EventType } from "./domain/events.js";
export { createLogger, type Service, startService } from "./service.js";
export { SqliteStore, type SqliteStoreOptions } from "./store/sqlite.js";
export type {
  AgentRecord,
  EventRecord,
  ItemRecord,
  SessionRecord,
  Store,
  TurnRecord,
  Usage,
} from "./store/types.js";
