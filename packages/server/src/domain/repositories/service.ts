/**
 * Repositories of environments: checked when an environment is planned (the URL's kind and address, the
 * credential), cloned into the workspace when it is prepared (from the project's shared mirror: no second download),
 * and handed back — committed onto a branch of the service's private record, pushed to the remote with the
 * repository's credential, diffed against the base — on request or after every engine turn when the repository has
 * an `output`. Every commit is a `repository.output` event with its item (`repositoryOutput`) in the turn that made
 * it; a push the remote rejects is a failed item (`push: "failed"`, the reason), never a lost change: the commit
 * stays in the record and the workspace is not touched.
 *
 * What is committed is the workspace's files (the repository's `.gitignore` honoured, the environment's own
 * `.environment/`, `.venv/` and `outputs/` left out), not the agent's own `.git` history: the service never runs git
 * in a repository the agent can write (platform/git-mirror/workspace.ts says why). Where things are:
 * `<repository dir>/mirrors/<project>/…` and `<repository dir>/records/<environment>/<n>.git` + `<n>.json`.
 */
import { createHash } from "node:crypto";
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { RepositorySettings } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import { ApiError, badRequest, conflict, notFound } from "../../kernel/errors.js";
import { KeyedLocks } from "../../kernel/lock.js";
import type {
  EnvironmentError,
  EnvironmentRecord,
  RepositoryOutputItem,
  RepositorySource,
  SessionRecord,
  TurnRecord,
} from "../../model/records.js";
import type { RepositoryView } from "../../model/repositories.js";
import { MirrorError, type Mirrors } from "../../platform/git-mirror/mirrors.js";
import { type PushResult, RepositoryRecord } from "../../platform/git-mirror/record.js";
import type { Remote } from "../../platform/git-mirror/remote.js";
import type { Spares } from "../../platform/git-mirror/spares.js";
import { type CheckoutRequest, checkOut } from "../../platform/git-mirror/workspace.js";
import { GitError } from "../../platform/git-store/git.js";
import { type OutboundGuard, TargetRefused } from "../../platform/net/outbound-guard.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { GitAuth } from "../vaults/service.js";
import { newObjectId } from "../vaults/service.js";
import { relativeRoot, remoteKind } from "./spec.js";

export interface RepositoryDeps {
  settings: RepositorySettings;
  mirrors: Mirrors;
  /** Ready-made clones (platform/git-mirror/spares.ts); null: every workspace is checked out when it is made. */
  spares: Spares | null;
  guard: OutboundGuard;
  hub: EventHub;
  clock: Clock;
  logger: Logger;
  /** A git_http credential's header for a URL (vaults: 404/400 when it does not fit). */
  gitAuth(projectId: string, credentialId: string, url: string, where: string): Promise<GitAuth>;
  /** An environment by id (null: gone). */
  environment(id: string): Promise<EnvironmentRecord | null>;
}

/** What the service keeps about a repository of an environment, beside its record. */
interface RepositoryState {
  source: RepositorySource;
  project_id: string;
  mirror: string;
  base: string;
  /** The branch checked out in the workspace (null: detached at a tag or commit). */
  branch: string | null;
  outputs: Array<{ commit: string; branch: string; push: RepositoryOutputItem["push"]; at: number }>;
}

export interface OutputRequest {
  /** Default: the repository's output branch, or `codex/<session id>`. */
  branch?: string | null;
  /** Default: the output setting's, or true. */
  push?: boolean;
  message?: string | null;
}

const AUTHOR = { name: "Codex agent", email: "agent@codex-agent-api.invalid" };
/** An environment whose repositories are checked out (prepared, and maybe bound to its thread). */
const prepared = (env: EnvironmentRecord) => env.status === "ready" || env.status === "connected";
/** A local repository's path as git is given it (and its mirror is keyed by). */
const withoutFileScheme = (url: string) => url.replace(/^file:\/\//, "");
/** Left out of a repository at the workspace's root: the environment's own directories and the outputs. */
const ROOT_EXCLUDES = ["/.environment/", "/.venv/", "/outputs/", "/.codex/"];

export class RepositoryService {
  private readonly locks = new KeyedLocks();

  constructor(private readonly deps: RepositoryDeps) {}

  // planning -----------------------------------------------------------------------------------------------

  /** Checks what can be checked before anything is made: credentials and the addresses named. */
  async check(projectId: string, sources: readonly RepositorySource[], where: string): Promise<void> {
    for (const [i, s] of sources.entries()) {
      const w = `${where}[${i}]`;
      if (s.credential) await this.deps.gitAuth(projectId, s.credential, s.url, `${w}.credential`);
      const kind = remoteKind(s.url, this.deps.settings.allowLocal, `${w}.url`);
      if (kind === "local") continue;
      try {
        await this.deps.guard.checkResolved(new URL(s.url));
      } catch (err) {
        if (!(err instanceof TargetRefused)) throw err;
        throw badRequest(`'${w}.url' is refused: ${err.message}`, `${w}.url`, "repository_url_refused");
      }
    }
  }

  // preparing -----------------------------------------------------------------------------------------------

  /** Clones the environment's repositories into its directory; the error says which one failed and why. */
  async checkout(
    env: EnvironmentRecord,
    sources: readonly RepositorySource[],
  ): Promise<EnvironmentError | null> {
    for (const [i, source] of sources.entries()) {
      try {
        const remote = await this.remote(env.project_id, source, `repositories[${i}]`);
        const point = await this.deps.mirrors.resolve({
          project: env.project_id,
          remote,
          ref: source.ref,
          depth: source.depth,
        });
        const rel = relativeRoot(source);
        const request: CheckoutRequest = {
          mirror: point.dir,
          commit: point.commit,
          branch: point.branch,
          originUrl: source.url,
          target: join(env.directory, rel),
          record: this.recordDir(env.id, i),
          exclude: rel === "" ? ROOT_EXCLUDES : [],
        };
        await this.checkOutOrTakeSpare(request);
        await this.deps.mirrors.pin(point.dir, `${env.id}/${i}`, point.commit);
        await this.save(env.id, i, {
          source,
          project_id: env.project_id,
          mirror: point.dir,
          base: point.commit,
          branch: point.branch,
          outputs: [],
        });
      } catch (err) {
        const code = err instanceof MirrorError ? err.code : "repository_clone_failed";
        const why = err instanceof ApiError || err instanceof MirrorError ? err.message : gitMessage(err);
        this.deps.logger.warn(
          { environment: env.id, repository: i, code, why },
          "repository checkout failed",
        );
        return { code, message: `repository ${i} (${source.url}): ${why}`, type: "environment_error" };
      }
    }
    return null;
  }

  /**
   * A ready-made clone of the same mirror, commit, branch, URL and excludes when there is one (two renames), else a
   * checkout; either way the next one is made in the background.
   */
  private async checkOutOrTakeSpare(req: CheckoutRequest): Promise<void> {
    const spares = this.deps.spares;
    const key = createHash("sha256")
      .update(JSON.stringify([req.mirror, req.commit, req.branch, req.originUrl, req.exclude]))
      .digest("hex")
      .slice(0, 32);
    if (!(spares && (await spares.take(key, req.target, req.record)))) await checkOut(req);
    spares?.replenish(key, (tree, record) => checkOut({ ...req, target: tree, record }));
  }

  /** The environment is gone: its records go, and its pins in the mirrors. */
  async forget(envId: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const state = await this.load(envId, i).catch(() => null);
      if (state) await this.deps.mirrors.unpin(state.mirror, `${envId}/${i}`);
    }
    await rm(join(this.deps.settings.dir, "records", envId), { recursive: true, force: true });
  }

  // reading -------------------------------------------------------------------------------------------------

  /** Where a project's mirror of a URL is (whether or not it exists). */
  mirrorOf(projectId: string, url: string): string {
    return this.deps.mirrors.mirrorDir(projectId, withoutFileScheme(url));
  }

  /** The session's environment, which its repositories belong to (404: it has none, or none with repositories). */
  async environmentOf(session: SessionRecord): Promise<EnvironmentRecord> {
    const id = session.extra.environment_id;
    const env = typeof id === "string" ? await this.deps.environment(id) : null;
    if (!env || (env.config.repositories ?? []).length === 0) {
      throw notFound(`Session ${session.id} has no repositories (its environment names none)`, "session_id");
    }
    return env;
  }

  async list(env: EnvironmentRecord): Promise<RepositoryView[]> {
    const sources = env.config.repositories ?? [];
    const out: RepositoryView[] = [];
    for (const [i] of sources.entries()) {
      const state = await this.load(env.id, i).catch(() => null);
      if (state) out.push(view(i, state));
    }
    return out;
  }

  /** The workspace's changes against the base: a unified diff, or a `format-patch` series of the outputs and them. */
  async diff(env: EnvironmentRecord, index: number, format: "diff" | "patch"): Promise<string> {
    const { state, record } = await this.open(env, index);
    return this.locked(record.dir, async () => {
      const tree = await record.snapshot(false);
      if (format === "diff") return record.diff(state.base, tree);
      const last = state.outputs.at(-1)?.commit ?? state.base;
      let tip = last;
      if ((await record.treeOf(last)) !== tree) {
        tip = await record.commit(tree, last, "Uncommitted changes in the workspace", AUTHOR);
      }
      return tip === state.base ? "" : record.formatPatch(state.base, tip);
    });
  }

  // handing back ---------------------------------------------------------------------------------------------

  /**
   * Commits the repository's changes (nothing changed since the last output: null) onto the branch, pushes it
   * when asked, and logs the item in the session's log (in `turn`'s span when given).
   */
  async output(
    session: SessionRecord,
    env: EnvironmentRecord,
    index: number,
    req: OutputRequest,
    turn: TurnRecord | null,
  ): Promise<RepositoryOutputItem | null> {
    const { state, record } = await this.open(env, index);
    const setting = state.source.output;
    const branch = req.branch ?? setting?.branch ?? `codex/${session.id}`;
    const push = req.push ?? setting?.push ?? true;
    return this.locked(record.dir, async () => {
      const previous = [...state.outputs].reverse().find((o) => o.branch === branch);
      const parent = previous?.commit ?? (await record.tip(branch)) ?? state.base;
      const tree = await record.snapshot(true);
      if ((await record.treeOf(parent)) === tree) return null;
      const message = req.message ?? messageOf(session, turn);
      const commit = await record.commit(tree, parent, message, AUTHOR);
      await record.setBranch(branch, commit);
      const stats = await record.diffStat(parent, commit);
      let result: PushResult | null = null;
      if (push) {
        const remote = await this.remote(state.project_id, state.source, "credential");
        result = await record.push(
          remote,
          commit,
          branch,
          join(this.deps.settings.dir, "scratch"),
          this.deps.settings.timeoutSeconds * 1000,
        );
      }
      const item: RepositoryOutputItem = {
        type: "repositoryOutput",
        id: newObjectId("repoout_"),
        repository: index,
        url: state.source.url,
        path: state.source.path,
        branch,
        commit,
        parent,
        base: state.base,
        message,
        stats,
        push: result === null ? "not_requested" : result.ok ? "pushed" : "failed",
        error: result && !result.ok ? `the remote refused the push: ${result.reason}` : null,
      };
      const now = this.deps.clock.now();
      state.outputs.push({ commit, branch, push: item.push, at: now });
      await this.save(env.id, index, state);
      await this.deps.hub.append(
        session.id,
        { type: "repository.output", data: { item } },
        {
          turn_id: turn?.id ?? null,
          ...(turn
            ? { item: { kind: "finish", turn_id: turn.id, item, created_at: now, state: "completed" } }
            : {}),
        },
      );
      return item;
    });
  }

  /** After an engine turn: every repository with an `output` setting hands back what changed. */
  async afterEngineTurn(session: SessionRecord, turn: TurnRecord): Promise<void> {
    const id = session.extra.environment_id;
    if (typeof id !== "string" || turn.subagent_id) return;
    const env = await this.deps.environment(id);
    if (!env || !prepared(env)) return;
    for (const [i, source] of (env.config.repositories ?? []).entries()) {
      if (!source.output) continue;
      try {
        await this.output(session, env, i, {}, turn);
      } catch (err) {
        this.deps.logger.warn(
          { session: session.id, repository: i, err: String(err) },
          "repository output failed",
        );
      }
    }
  }

  // ----------------------------------------------------------------------------------------------------------

  private async remote(projectId: string, source: RepositorySource, where: string): Promise<Remote> {
    const kind = remoteKind(source.url, this.deps.settings.allowLocal, where);
    const auth = source.credential
      ? await this.deps.gitAuth(projectId, source.credential, source.url, where)
      : null;
    if (kind === "local") {
      return { url: withoutFileScheme(source.url), kind, auth: null, pin: null };
    }
    const u = new URL(source.url);
    let address: string | null;
    try {
      address = await this.deps.guard.pinnedAddress(u);
    } catch (err) {
      if (err instanceof TargetRefused)
        throw badRequest(`the repository's address is refused: ${err.message}`, where);
      throw err;
    }
    // git:// has no name pinning in git: the name is checked now, and git resolves it again (documented).
    const pin =
      address && kind !== "git"
        ? {
            host: u.hostname.replace(/^\[|\]$/g, ""),
            port: Number(u.port) || (kind === "https" ? 443 : 80),
            address,
          }
        : null;
    return { url: source.url, kind, auth, pin };
  }

  private async open(
    env: EnvironmentRecord,
    index: number,
  ): Promise<{ state: RepositoryState; record: RepositoryRecord }> {
    const sources = env.config.repositories ?? [];
    if (!Number.isInteger(index) || index < 0 || index >= sources.length) {
      throw notFound(`The session's environment has no repository ${index}`, "repository");
    }
    if (!prepared(env)) {
      throw conflict(
        `The session's environment is ${env.status}: its repositories are not ready`,
        "environment_not_ready",
      );
    }
    const state = await this.load(env.id, index).catch(() => null);
    if (!state) {
      throw conflict(
        `Repository ${index} of the environment has no record on this instance (with several instances, ` +
          "--repository-dir must be on storage they all see)",
        "repository_unavailable",
      );
    }
    const record = new RepositoryRecord(
      this.recordDir(env.id, index),
      join(env.directory, relativeRoot(state.source)),
    );
    return { state, record };
  }

  private recordDir(envId: string, i: number): string {
    return join(this.deps.settings.dir, "records", envId, `${i}.git`);
  }

  private async load(envId: string, i: number): Promise<RepositoryState> {
    const text = await readFile(join(this.deps.settings.dir, "records", envId, `${i}.json`), "utf8");
    return JSON.parse(text) as RepositoryState;
  }

  private async save(envId: string, i: number, state: RepositoryState): Promise<void> {
    const file = join(this.deps.settings.dir, "records", envId, `${i}.json`);
    await writeFile(`${file}.tmp`, JSON.stringify(state), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
  }

  private locked<T>(dir: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(dir, fn);
  }
}

function view(index: number, s: RepositoryState): RepositoryView {
  return {
    index,
    url: s.source.url,
    ref: s.source.ref,
    path: s.source.path,
    base_commit: s.base,
    branch: s.branch,
    output: s.source.output,
    outputs: s.outputs,
  };
}

/** The commit message: the turn's first line of input (or the session's id), then where it came from. */
function messageOf(session: SessionRecord, turn: TurnRecord | null): string {
  const text = firstText(turn?.input)?.split("\n")[0]?.trim() ?? "";
  const subject = text
    ? text.length > 72
      ? `${text.slice(0, 71)}…`
      : text
    : `Changes of session ${session.id}`;
  return `${subject}\n\nSession: ${session.id}${turn ? `\nTurn: ${turn.id}` : ""}\n`;
}

function firstText(input: unknown): string | null {
  if (typeof input === "string") return input;
  if (Array.isArray(input)) {
    for (const part of input) {
      const t = firstText(part);
      if (t) return t;
    }
    return null;
  }
  if (input && typeof input === "object") {
    const o = input as Record<string, unknown>;
    if (typeof o.text === "string" && o.text) return o.text;
    return firstText(o.content);
  }
  return null;
}

function gitMessage(err: unknown): string {
  if (err instanceof GitError) return err.stderr.trim().split("\n").slice(-3).join(" / ") || err.message;
  return err instanceof Error ? err.message : String(err);
}
