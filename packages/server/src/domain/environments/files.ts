/**
 * An environment's files: the Files API references of a configuration, looked up in the caller's project when an
 * environment or template is planned (404 otherwise); a file written into a prepared environment between turns
 * (inline bytes or a Files API file's contents), handed over to the agent's sandbox; and the environment's files
 * listed at the paths clients see (`/workspace/…`, as the session's artifacts).
 */
import { statSync } from "node:fs";
import { ApiError, conflict, notFound } from "../../kernel/errors.js";
import { environmentPath } from "../../model/environment-paths.js";
import type { Scope } from "../../model/scope.js";
import { type ArtifactInfo, listArtifacts } from "../../platform/workspace/artifacts.js";
import { encodeArtifactId, resolveDetailed } from "../../platform/workspace/paths.js";
import { writeUpload } from "../../platform/workspace/upload.js";
import type { EnvironmentRecord, Store } from "../../store/types.js";
import type { FileService } from "../files/service.js";
import { ContentMissingError, copyContents } from "../files/storage.js";
import type { Workspaces } from "../sandboxes/workspaces.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import { type FileSpec, WORKSPACE_ROOT, workspaceDirectory, workspaceFilePath } from "./spec.js";

/**
 * Looks up the Files API files among `files` (of the caller's project): their size, and where their contents
 * are. A file that is not there is 404, named by the client's parameter (or by the template it came from).
 */
export async function resolveFiles(
  fileService: FileService,
  scope: Scope,
  files: FileSpec[] | null,
  where: string,
  templateId: string | null,
): Promise<void> {
  for (const f of files ?? []) {
    const source = f.source;
    if (source.type !== "file_id") continue;
    let found: Awaited<ReturnType<FileService["get"]>>;
    try {
      found = await fileService.get(
        scope,
        source.file_id,
        source.param ?? `${where}.environment_template_id`,
      );
    } catch (err) {
      if (source.param !== null || !(err instanceof ApiError) || err.kind !== "not_found") throw err;
      throw notFound(
        `No such File object: ${source.file_id} (the file ${f.path} of the environment template ${templateId})`,
        `${where}.environment_template_id`,
      );
    }
    source.resolved = { bytes: found.bytes, content: fileService.contentPath(found) };
  }
}

export interface WriteFileDeps {
  store: Store;
  files: FileService;
  workspaces: Workspaces;
  /** Environments are made in containers (the container backend). */
  containers: boolean;
}

/** Writes a file into a prepared environment (between turns), replacing a regular file at the same path. */
export async function writeEnvironmentFile(
  deps: WriteFileDeps,
  scope: Scope,
  env: EnvironmentRecord,
  body: { type: string; path: string; data?: string; file_id?: string },
): Promise<{ path: string; size_bytes: number }> {
  const file = body.type === "file_id" ? await deps.files.get(scope, body.file_id ?? "") : null;
  if (env.status !== "ready" && env.status !== "connected") {
    throw conflict(
      `Environment ${env.id} is ${env.status}: files can be added once it is ready`,
      "environment_not_ready",
    );
  }
  const session = env.session_id ? await deps.store.getSession(env.session_id) : undefined;
  if (session?.active_turn_id) {
    throw conflict("The environment's session has a running turn: add files between turns", "session_busy");
  }
  const rel = workspaceFilePath(body.path, "path");
  let size: number;
  if (!file) {
    size = writeUpload(env.directory, { path: rel, content_base64: body.data ?? "" }).bytes;
  } else {
    try {
      size = await copyContents(deps.files.contentPath(file), env.directory, rel);
    } catch (err) {
      if (err instanceof ContentMissingError) throw notFound(`No such File object: ${file.id}`, "file_id");
      throw err;
    }
  }
  // The file (and the directories made for it) become the agent's: the sandbox that holds the directory is its
  // session's, or (made ahead, not yet attached) the environment's own.
  const sandboxId = session ? sandboxIdOf(session) : deps.containers ? env.id : null;
  await deps.workspaces.handOver({ sandboxId }, [rel.split("/")[0]!]);
  return { path: body.path, size_bytes: size };
}

/** Files of the environment (regular files, by path), optionally under a directory; `after` is a path. */
export function listEnvironmentFiles(
  env: EnvironmentRecord,
  opts: { limit: number; order: "asc" | "desc"; after: string | null; path: string | null },
): { data: Array<{ path: string; size_bytes: number }>; next: string | null } {
  const dirRel = opts.path === null ? "" : workspaceDirectory(opts.path, "path");
  const root = dirRel === "" ? env.directory : resolveDetailed(env.directory, dirRel).abs;
  let st: ReturnType<typeof statSync> | null = null;
  try {
    st = statSync(root);
  } catch {
    st = null;
  }
  if (!st?.isDirectory()) return { data: [], next: null };
  const prefix = dirRel === "" ? "" : `${dirRel}/`;
  // The same paths as the session's artifacts (environment-paths.ts).
  const show = (a: ArtifactInfo) => ({
    path: environmentPath(WORKSPACE_ROOT, `${prefix}${a.path}`),
    size_bytes: a.size,
  });
  const afterRel =
    opts.after === null
      ? null
      : opts.after.startsWith(`${WORKSPACE_ROOT}/${prefix}`)
        ? opts.after.slice(`${WORKSPACE_ROOT}/${prefix}`.length)
        : null;
  if (opts.order === "asc") {
    const page = listArtifacts(root, {
      limit: opts.limit,
      ...(afterRel !== null ? { after: encodeArtifactId(afterRel) } : {}),
    });
    const data = page.data.map(show);
    return { data, next: page.has_more ? (data.at(-1)?.path ?? null) : null };
  }
  const all = listArtifacts(root).data.reverse();
  const rest = afterRel === null ? all : all.filter((a) => a.path < afterRel);
  const data = rest.slice(0, opts.limit).map(show);
  return { data, next: rest.length > opts.limit ? (data.at(-1)?.path ?? null) : null };
}
