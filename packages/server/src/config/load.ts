/**
 * Flags + environment → `Config`. The options are rows of the tables in tables/ (one per area): the parse spec,
 * the usage text and the `Config` type all come from them. How a row is read: option.ts.
 */
import type { ConfigOf } from "./option.js";
import { reader } from "./read.js";
import { TABLES } from "./tables/index.js";
import { usageOf } from "./usage.js";

export { isLoopback, LOOPBACK_HOST_NAMES } from "./hosts.js";
export { ConfigError } from "./option.js";
export type { Provider } from "./tables/model.js";

/** Everything the service needs to run, from flags and environment. */
export type Config = ConfigOf<typeof TABLES>;
export type GoalLimits = Config["goals"];
export type CheckpointSettings = Config["checkpoints"];
export type EnvironmentSettings = Config["environments"];
export type RepositorySettings = Config["repositories"];
export type FileSettings = Config["files"];

const read = reader(TABLES);
const USAGE = usageOf(TABLES);

export function usage(): string {
  return USAGE;
}

/** Flags win over the environment; relative paths are taken from `cwd`. Throws ConfigError on a bad value. */
export function loadConfig(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Config {
  return read(argv, env, cwd);
}
