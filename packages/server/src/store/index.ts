export { SqliteStore } from "./sqlite/index.js";
export type * from "./types.js";
