/**
 * `repositories` of an environment (inline, environments.create, templates): this server's extension of the official
 * `openai_hosted` environment. Each is `{url, ref?, path?, depth?, credential?, output?}`, checked strictly:
 * - `url`: `https://…`, `http://…` or `git://…` (no user name or password in it: credentials come from the vault),
 *   or — only when the operator allows it (`--allow-local-repositories`) — `file://…` or an absolute path. ssh and
 *   scp-style remotes are refused (422): the service would have to hold a key and trust host keys for them.
 * - `ref`: a branch, a tag or a full commit id (default: the remote's default branch);
 * - `path`: where its root goes, `/workspace` (default) or a directory under it; two repositories cannot nest;
 * - `credential`: a `git_http` credential of the project's vaults (its id); its URL must be a prefix of `url`;
 * - `output`: `{type: "branch", branch?, push?}`: the service commits the workspace's changes of this repository
 *   after every turn onto the branch (default `codex/<session id>`) and pushes it (default true).
 * Whether the address may be reached is the outbound guard's to say (checked by the caller).
 */
import { z } from "zod";
import { badRequest } from "../../kernel/errors.js";
import type { RepositorySource } from "../../model/records.js";
import { unsupported, WORKSPACE_ROOT, workspaceDirectory } from "../environments/paths.js";

export const MAX_REPOSITORIES = 10;

export const RepositoryParam = z
  .object({
    url: z.string().min(1).max(2048),
    ref: z.string().min(1).max(256).nullable().optional(),
    path: z.string().min(1).max(4096).nullable().optional(),
    depth: z.number().int().min(1).max(1_000_000).nullable().optional(),
    credential: z.string().min(1).max(256).nullable().optional(),
    output: z
      .object({
        type: z.literal("branch"),
        branch: z.string().min(1).max(200).nullable().optional(),
        push: z.boolean().optional(),
      })
      .strict()
      .nullable()
      .optional(),
  })
  .strict();

export const RepositoriesParam = z.array(RepositoryParam).max(MAX_REPOSITORIES);

/** How the service reaches a repository. */
export type RemoteKind = "https" | "http" | "git" | "local";

/** A ref name git accepts (`git check-ref-format --allow-onelevel`), never an option. */
export function isRefName(name: string): boolean {
  return (
    !name.startsWith("-") &&
    !name.startsWith("/") &&
    !name.endsWith("/") &&
    !name.endsWith(".") &&
    !name.endsWith(".lock") &&
    !name.includes("..") &&
    !name.includes("//") &&
    !name.includes("@{") &&
    name !== "@" &&
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what git refuses in refs
    !/[\x00-\x20\x7f~^:?*[\\]/.test(name) &&
    !name.split("/").some((c) => c.startsWith("."))
  );
}

/** The kind of a repository URL, or a 4xx saying why it cannot be one. */
export function remoteKind(url: string, allowLocal: boolean, where: string): RemoteKind {
  if (url.startsWith("/") || url.startsWith("file://")) {
    if (!allowLocal) {
      throw badRequest(
        `'${where}': a path on the server is not a repository clients may use (its operator can allow it: ` +
          "--allow-local-repositories)",
        where,
        "repository_url_refused",
      );
    }
    if (url.includes("\0") || url.split("/").includes(".."))
      throw badRequest(`'${where}' is not a clean path`, where);
    return "local";
  }
  if (/^(ssh:\/\/|git\+ssh:\/\/|ssh\+git:\/\/)/.test(url) || /^[^/:]+@[^/:]+:/.test(url)) {
    throw unsupported(
      `'${where}': ssh remotes are not supported by this server; use the repository's https URL with a git_http ` +
        "credential",
      where,
      "unsupported_repository_url",
    );
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw badRequest(`'${where}' is not a repository URL (https://…, http://… or git://…)`, where);
  }
  const kind = u.protocol.slice(0, -1);
  if (kind !== "https" && kind !== "http" && kind !== "git") {
    throw unsupported(
      `'${where}': ${u.protocol} remotes are not supported (https, http or git)`,
      where,
      "unsupported_repository_url",
    );
  }
  if (u.username || u.password) {
    throw badRequest(
      `'${where}' cannot carry a user name or password: give a vault credential instead`,
      where,
    );
  }
  if (u.hash || u.search) throw badRequest(`'${where}' cannot have a query or a fragment`, where);
  return kind;
}

/** Parses the list (null: not given). */
export function parseRepositories(
  list: z.infer<typeof RepositoriesParam> | null | undefined,
  allowLocal: boolean,
  where: string,
): RepositorySource[] | null {
  if (list === undefined || list === null) return null;
  const roots: string[] = [];
  return list.map((r, i) => {
    const w = `${where}[${i}]`;
    remoteKind(r.url, allowLocal, `${w}.url`);
    if (r.ref !== undefined && r.ref !== null && !isRefName(r.ref)) {
      throw badRequest(`'${w}.ref' is not a branch, tag or commit name`, `${w}.ref`);
    }
    const path = r.path ?? WORKSPACE_ROOT;
    const rel = workspaceDirectory(path, `${w}.path`);
    for (const other of roots) {
      if (
        other === rel ||
        other === "" ||
        rel === "" ||
        rel.startsWith(`${other}/`) ||
        other.startsWith(`${rel}/`)
      ) {
        throw badRequest(`'${w}.path' overlaps another repository of the environment`, `${w}.path`);
      }
    }
    roots.push(rel);
    const branch = r.output?.branch ?? null;
    if (branch !== null && !isRefName(branch)) {
      throw badRequest(`'${w}.output.branch' is not a branch name`, `${w}.output.branch`);
    }
    return {
      url: r.url,
      ref: r.ref ?? null,
      path: rel === "" ? WORKSPACE_ROOT : `${WORKSPACE_ROOT}/${rel}`,
      depth: r.depth ?? null,
      credential: r.credential ?? null,
      output: r.output ? { type: "branch", branch, push: r.output.push ?? true } : null,
    };
  });
}

/** Workspace-relative root of a repository ("" = the workspace itself). */
export const relativeRoot = (r: RepositorySource): string =>
  r.path === WORKSPACE_ROOT ? "" : r.path.slice(WORKSPACE_ROOT.length + 1);
