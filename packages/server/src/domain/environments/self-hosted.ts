/**
 * The directory a `self_hosted` session works in, when its client names one (`workspace_directory`): an existing
 * directory inside one of the roots the operator allows (default: the workspace root), never another session's or
 * environment's directory, nor one holding them, nor the server's data directory. Paths are compared resolved
 * (symbolic links followed), so a link cannot lead out of what is allowed.
 */
import { statSync } from "node:fs";
import { relative, resolve, sep } from "node:path";
import type { Config } from "../../config/load.js";
import { ApiError, badRequest } from "../../kernel/errors.js";
import { isInside, realpathLoose } from "../../platform/workspace/paths.js";
import { WORKSPACE_ROOT } from "./spec.js";

/**
 * The directory of a `self_hosted` session: none (the session's own directory, today's meaning) for an absent
 * `workspace_directory` or `/workspace`; otherwise the allowed directory `raw` names (4xx when it is not one).
 */
export function selfHostedDirectory(
  config: Pick<Config, "environments" | "workspaceRoot" | "dataDir">,
  raw: unknown,
  where: string,
): string | null {
  if (
    raw === undefined ||
    raw === null ||
    raw === "" ||
    raw === WORKSPACE_ROOT ||
    raw === `${WORKSPACE_ROOT}/`
  ) {
    return null;
  }
  if (typeof raw !== "string" || !raw.startsWith("/") || raw.includes("\0")) {
    throw badRequest(`'${where}' must be an absolute directory path`, where);
  }
  const real = realpathLoose(resolve(raw));
  let isDir = false;
  try {
    isDir = real !== null && statSync(real).isDirectory();
  } catch {
    isDir = false;
  }
  const refused = (why: string) =>
    new ApiError("forbidden", `'${where}': ${why}`, where, "workspace_directory_not_allowed");
  if (!real || !isDir) throw badRequest(`'${where}' is not an existing directory`, where);
  const roots = config.environments.selfHostedRoots.map((r) => realpathLoose(resolve(r)) ?? resolve(r));
  if (!roots.some((r) => isInside(r, real))) {
    throw refused("outside the directories this server's operator allows for self-hosted sessions");
  }
  const workspaceRoot = realpathLoose(resolve(config.workspaceRoot)) ?? config.workspaceRoot;
  const dataDir = realpathLoose(resolve(config.dataDir)) ?? config.dataDir;
  if (isInside(real, workspaceRoot) || isInside(real, dataDir)) {
    throw refused("it holds the server's data or other sessions' directories");
  }
  if (isInside(workspaceRoot, real)) {
    const first = relative(workspaceRoot, real).split(sep)[0] ?? "";
    if (/^(sess|env)_/.test(first)) throw refused("it is another session's or environment's directory");
  } else if (isInside(dataDir, real)) {
    throw refused("it is inside the server's data directory");
  }
  return real;
}
