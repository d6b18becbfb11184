/**
 * Opening a checkpoint store's directory for a workspace: the options with their defaults, the checks (the store
 * lies outside the workspace and does not contain it; a directory that is not a store yet must be empty), the bare
 * repository created when missing, and the files of the store git reads on every call (info/exclude,
 * info/attributes). Nothing of the workspace is read here.
 */
import { lstat, mkdir, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { DEFAULT_EXCLUDES, DEFAULT_MAX_FILE_BYTES } from "../../config/checkpoint-defaults.js";
import type { CheckpointOptions } from "../../model/checkpoints.js";
import { Git, runGit } from "./git.js";

export interface OpenedStore {
  git: Git;
  opts: CheckpointOptions;
  /** Plain directory names of the exclude list (the tree walks skip them early). */
  excludedNames: ReadonlySet<string>;
  /** The repository was created just now (an existing one's index may hold racily clean entries). */
  fresh: boolean;
}

/** Opens the store at `gitDir` (created when missing; it must lie outside the workspace) for `workspace`. */
export async function openStore(
  gitDir: string,
  workspace: string,
  options: Partial<CheckpointOptions>,
): Promise<OpenedStore> {
  const opts: CheckpointOptions = {
    maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
    exclude: options.exclude ?? DEFAULT_EXCLUDES,
    retries: options.retries ?? 3,
    git: options.git ?? "git",
    now: options.now ?? (() => Date.now() / 1000),
    watch: options.watch ?? true,
    watchAfterMs: options.watchAfterMs,
    beforeIndexUpdate: options.beforeIndexUpdate,
  };
  for (const pattern of opts.exclude) {
    if (/[\r\n]/.test(pattern))
      throw new Error(`exclude pattern with a line break: ${JSON.stringify(pattern)}`);
  }
  const ws = await realpath(workspace);
  if (!(await stat(ws)).isDirectory()) throw new Error(`workspace is not a directory: ${ws}`);
  const dir = await realpathOfMaybeMissing(resolve(gitDir));
  if (within(dir, ws) || within(ws, dir)) {
    throw new Error(
      `the checkpoint store (${dir}) must lie outside the workspace (${ws}) and not contain it`,
    );
  }
  await mkdir(dir, { recursive: true });
  let fresh = false;
  if (!(await exists(join(dir, "HEAD")))) {
    if ((await readdir(dir)).length > 0) throw new Error(`${dir} is neither empty nor a checkpoint store`);
    await runGit(opts.git, ["init", "--bare", "--quiet", "--template=", dir], { cwd: dir });
    fresh = true;
  }
  await mkdir(join(dir, "info"), { recursive: true });
  const exclude = `# checkpoint excludes (written by codex-agent-api)\n${opts.exclude.join("\n")}\n`;
  await writeIfChanged(join(dir, "info", "exclude"), exclude);
  // Highest-precedence attributes: no line-ending, ident, filter or encoding conversion, whatever the
  // workspace's .gitattributes say, so files are stored and restored byte for byte.
  await writeIfChanged(
    join(dir, "info", "attributes"),
    "* -text -eol -ident -filter -working-tree-encoding\n",
  );
  if (!fresh) await rm(join(dir, "index.lock"), { force: true }); // left by a crash: one owner per store
  const names = opts.exclude
    .map((p) => p.replace(/\/$/, ""))
    .filter((p) => p !== "" && !/[/*?[\]!\\]/.test(p) && !p.startsWith("#"));
  return { git: new Git(opts.git, dir, ws), opts, excludedNames: new Set(names), fresh };
}

function within(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

async function realpathOfMaybeMissing(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    const parent = dirname(path);
    if (parent === path) return path;
    return join(
      await realpathOfMaybeMissing(parent),
      path.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)),
    );
  }
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

async function writeIfChanged(path: string, content: string): Promise<void> {
  const old = await readFile(path, "utf8").catch(() => null);
  if (old !== content) await writeFile(path, content);
}
