/**
 * Shared bare mirrors of clients' repositories: one per project and remote URL (`<dir>/mirrors/<project>/<key>.git`),
 * fetched on demand — every branch and tag of the remote, `+refs/heads/*` and `+refs/tags/*` as they are there — and
 * read by the workspaces made from it (workspace.ts copies its packs: no second download). Fetches of one mirror are
 * serialised, and a session that asks while one is running waits for it and shares its result (ten sessions at once
 * on one repository: one fetch).
 *
 * What a mirror may cost: a fetch is stopped when the mirror grows beyond `maxBytes` or runs longer than
 * `timeoutMs` (a clear error, the mirror left as it was before the fetch's objects). Mirrors are bounded together
 * by `totalMaxBytes`: after a fetch, the least recently used are removed until the rest fit, except those an
 * environment still needs (a pin: `refs/pins/<name>` holds each base commit in use, so neither gc nor a remote's
 * force-push makes the objects of a live workspace's private record disappear).
 */
import { createHash } from "node:crypto";
import { mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KeyedLocks } from "../../kernel/lock.js";
import { FORCED_CONFIG, runGit } from "../git-store/git.js";
import { diskUsageOf } from "../git-store/shadow-repo.js";
import { gitFailure, type Remote, withRemote } from "./remote.js";

export interface MirrorSettings {
  /** The repositories directory (`mirrors/` and `scratch/` go under it). */
  dir: string;
  maxBytes: number;
  totalMaxBytes: number;
  timeoutMs: number;
  git?: string;
}

/** What a session asks of a repository. */
export interface MirrorRequest {
  project: string;
  remote: Remote;
  /** A branch, a tag, a full commit id, or null: the remote's default branch. */
  ref: string | null;
  /** Fetch at most this many commits of history (a shallow mirror); null: all. */
  depth: number | null;
}

/** Where a request points in its mirror. */
export interface MirrorPoint {
  /** The mirror's git directory. */
  dir: string;
  commit: string;
  /** The branch the ref names (the default branch's name for `ref: null`), null for a tag or a commit. */
  branch: string | null;
}

/** A fetch or a lookup failed: `code` names why, `message` says it (no credential in it). */
export class MirrorError extends Error {
  constructor(
    readonly code: "repository_fetch_failed" | "repository_too_large" | "repository_ref_not_found",
    message: string,
  ) {
    super(message);
  }
}

const FULL_ID = /^[0-9a-f]{40}$/;
const PIN_PREFIX = "refs/pins/";

export class Mirrors {
  private readonly locks = new KeyedLocks();
  /** Fetches running, per mirror: a request that arrives meanwhile shares the result. */
  private readonly fetching = new Map<string, Promise<void>>();
  private readonly git: string;

  constructor(private readonly settings: MirrorSettings) {
    this.git = settings.git ?? "git";
  }

  /** The mirror of a project's remote (it may not exist yet). */
  mirrorDir(project: string, url: string): string {
    const key = createHash("sha256").update(url).digest("hex").slice(0, 32);
    return join(this.settings.dir, "mirrors", safeName(project), `${key}.git`);
  }

  /** Fetches what the request needs (unless its commit is there already) and says where it points. */
  async resolve(req: MirrorRequest): Promise<MirrorPoint> {
    const dir = this.mirrorDir(req.project, req.remote.url);
    const known = req.ref && FULL_ID.test(req.ref) ? await this.commitOf(dir, req.ref) : null;
    if (known) {
      await this.touch(dir);
      return { dir, commit: known, branch: null };
    }
    const head = req.ref === null ? await this.defaultBranch(req) : null;
    await this.fetchShared(dir, req);
    const ref = req.ref ?? head!;
    const point = await this.lookup(dir, ref);
    if (point) return point;
    if (FULL_ID.test(ref)) {
      // A commit no branch or tag points at: asked for by id (servers allow it for reachable commits).
      await this.locked(dir, () => this.fetchRefs(dir, req, [ref]));
      const commit = await this.commitOf(dir, ref);
      if (commit) return { dir, commit, branch: null };
    }
    throw new MirrorError("repository_ref_not_found", `the repository has no branch, tag or commit '${ref}'`);
  }

  /** Keeps `commit`'s objects in the mirror (for an environment's private record) until `unpin`. */
  async pin(dir: string, name: string, commit: string): Promise<void> {
    await this.locked(dir, () => this.bare(dir, ["update-ref", `${PIN_PREFIX}${name}`, commit]));
  }

  async unpin(dir: string, name: string): Promise<void> {
    await this.locked(dir, () =>
      this.bare(dir, ["update-ref", "-d", `${PIN_PREFIX}${name}`]).catch(() => undefined),
    );
  }

  /**
   * Removes the least recently used mirrors without pins until all of them fit in `totalMaxBytes`; returns how
   * many were removed. A mirror used in the last `idleMs` (default 10 minutes) stays: a session may be about to
   * clone from it (it is pinned once its workspace is made).
   */
  async prune(idleMs = 10 * 60 * 1000): Promise<number> {
    const root = join(this.settings.dir, "mirrors");
    const all: Array<{ dir: string; used: number; bytes: number }> = [];
    for (const project of await readdir(root).catch(() => [] as string[])) {
      for (const name of await readdir(join(root, project)).catch(() => [] as string[])) {
        if (!name.endsWith(".git")) continue;
        const dir = join(root, project, name);
        const st = await stat(join(dir, "last-used")).catch(() => null);
        all.push({ dir, used: st?.mtimeMs ?? 0, bytes: await diskUsageOf(dir) });
      }
    }
    let total = all.reduce((n, m) => n + m.bytes, 0);
    let removed = 0;
    const now = Date.now();
    for (const m of all.sort((a, b) => a.used - b.used)) {
      if (total <= this.settings.totalMaxBytes) break;
      if (now - m.used < idleMs) continue;
      const gone = await this.locked(m.dir, async () => {
        if ((await this.pins(m.dir)).length > 0) return false;
        await rm(m.dir, { recursive: true, force: true });
        return true;
      });
      if (gone) {
        total -= m.bytes;
        removed += 1;
      }
    }
    return removed;
  }

  /** The pins a mirror holds (names). */
  async pins(dir: string): Promise<string[]> {
    const out = await this.bare(dir, ["for-each-ref", "--format=%(refname)", PIN_PREFIX]).catch(() => "");
    return out
      .split("\n")
      .filter(Boolean)
      .map((r) => r.slice(PIN_PREFIX.length));
  }

  // ----------------------------------------------------------------------------------------------------------

  private async fetchShared(dir: string, req: MirrorRequest): Promise<void> {
    const running = this.fetching.get(dir);
    if (running) return running;
    const work = this.locked(dir, () => this.fetchRefs(dir, req, null)).finally(() =>
      this.fetching.delete(dir),
    );
    this.fetching.set(dir, work);
    return work;
  }

  /** Fetches every branch and tag (`ids` null) or the given commits, within the size and time limits. */
  private async fetchRefs(dir: string, req: MirrorRequest, ids: string[] | null): Promise<void> {
    await this.ensureMirror(dir);
    const refspecs = ids ?? ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];
    const shallow = await stat(join(dir, "shallow")).then(
      () => true,
      () => false,
    );
    const depth =
      req.depth !== null ? [`--depth=${req.depth}`] : shallow && ids === null ? ["--unshallow"] : [];
    const controller = new AbortController();
    const watch = this.watchSize(dir, controller);
    try {
      await withRemote(join(this.settings.dir, "scratch"), req.remote, (env) =>
        runGit(
          this.git,
          [
            `--git-dir=${dir}`,
            ...FORCED_CONFIG,
            "fetch",
            "--quiet",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            ...(ids === null ? ["--prune", "--prune-tags"] : []),
            ...depth,
            "--",
            req.remote.url,
            ...refspecs,
          ],
          { cwd: dir, env, timeoutMs: this.settings.timeoutMs, signal: controller.signal },
        ),
      );
    } catch (err) {
      if (controller.signal.aborted) throw this.tooLarge();
      throw new MirrorError("repository_fetch_failed", `git fetch failed: ${gitFailure(err, req.remote)}`);
    } finally {
      clearInterval(watch);
    }
    // A fetch quicker than the watch: checked once more. An unpinned mirror over the limit goes.
    if ((await diskUsageOf(dir)) > this.settings.maxBytes) {
      if ((await this.pins(dir)).length === 0) await rm(dir, { recursive: true, force: true });
      throw this.tooLarge();
    }
    await this.touch(dir);
    void this.prune().catch(() => undefined);
  }

  private tooLarge(): MirrorError {
    return new MirrorError(
      "repository_too_large",
      `the repository is larger than this server allows (${this.settings.maxBytes} bytes)`,
    );
  }

  /** Stops the fetch (aborts `controller`) when the mirror grows beyond the limit (checked every 200 ms, and once it has ended). */
  private watchSize(dir: string, controller: AbortController): NodeJS.Timeout {
    let checking = false;
    const timer = setInterval(() => {
      if (checking) return;
      checking = true;
      diskUsageOf(dir)
        .then((bytes) => {
          if (bytes > this.settings.maxBytes) controller.abort("too large");
        })
        .finally(() => {
          checking = false;
        });
    }, 200);
    timer.unref();
    return timer;
  }

  /** The remote's default branch (what its HEAD names). */
  private async defaultBranch(req: MirrorRequest): Promise<string> {
    let out: string;
    try {
      out = await withRemote(join(this.settings.dir, "scratch"), req.remote, (env) =>
        runGit(this.git, [...FORCED_CONFIG, "ls-remote", "--symref", "--", req.remote.url, "HEAD"], {
          cwd: this.settings.dir,
          env,
          timeoutMs: this.settings.timeoutMs,
        }).then((r) => r.stdout.toString("utf8")),
      );
    } catch (err) {
      throw new MirrorError(
        "repository_fetch_failed",
        `git ls-remote failed: ${gitFailure(err, req.remote)}`,
      );
    }
    const m = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(out);
    if (!m)
      throw new MirrorError("repository_ref_not_found", "the repository has no default branch (empty?)");
    return m[1]!;
  }

  /** A branch (preferred) or tag of the mirror, or a commit id it has. */
  private async lookup(dir: string, ref: string): Promise<MirrorPoint | null> {
    for (const [full, branch] of [
      [`refs/heads/${ref}`, ref],
      [`refs/tags/${ref}`, null],
    ] as const) {
      const commit = await this.commitOf(dir, full);
      if (commit) return { dir, commit, branch };
    }
    const commit = FULL_ID.test(ref) ? await this.commitOf(dir, ref) : null;
    return commit ? { dir, commit, branch: null } : null;
  }

  private async commitOf(dir: string, rev: string): Promise<string | null> {
    const out = await this.bare(dir, [
      "rev-parse",
      "--verify",
      "--quiet",
      "--end-of-options",
      `${rev}^{commit}`,
    ]).catch(() => "");
    return FULL_ID.test(out) ? out : null;
  }

  private async ensureMirror(dir: string): Promise<void> {
    if (await stat(join(dir, "HEAD")).catch(() => null)) return;
    const tmp = `${dir}.new`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true, mode: 0o700 });
    await runGit(this.git, [...FORCED_CONFIG, "init", "--quiet", "--bare", tmp], { cwd: tmp });
    await rename(tmp, dir);
  }

  private async touch(dir: string): Promise<void> {
    const file = join(dir, "last-used");
    const now = new Date();
    await utimes(file, now, now).catch(() => writeFile(file, "").catch(() => undefined));
  }

  private bare(dir: string, args: string[]): Promise<string> {
    return runGit(this.git, [`--git-dir=${dir}`, ...FORCED_CONFIG, ...args], { cwd: dir }).then((r) =>
      r.stdout.toString("utf8").trim(),
    );
  }

  private locked<T>(dir: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(dir, fn);
  }
}

/** A project id as a directory name (ids are `proj_…`/`default`; anything else is hashed). */
function safeName(project: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(project) ? project : createHash("sha256").update(project).digest("hex");
}
