export { MIGRATIONS, migrate, SCHEMA_VERSION } from "./migrations.js";
export { SqliteStore, type SqliteStoreOptions } from "./sqlite.js";
export type * from "./types.js";
