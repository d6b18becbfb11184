/**
 * Files in a session's workspace, as both dialects offer them: listed in path order (descending: reverse path
 * order), read, deleted, uploaded (the template's upload route, confined to the workspace root); each with where it
 * is inside the session's environment (`/workspace/…`, never this host's directory) and the turn that published it.
 */
import { statSync } from "node:fs";
import { environmentPath, environmentRoot } from "../model/environment-paths.js";
import type { SessionRecord } from "../model/records.js";
import {
  type ArtifactInfo,
  contentTypeFor,
  decodeArtifactId,
  deleteArtifact,
  listArtifacts,
  readArtifact,
  statArtifact,
  type UploadResult,
  writeUpload,
} from "../platform/workspace/index.js";
import type { Store } from "../store/types.js";

/** The `turn_id` of a file no turn published. */
const NO_TURN = "";

/** How many events at the start of a session's log are searched for the end of its environment's preparation. */
const SETUP_EVENTS = 200;

/** A workspace file, with its path as the session's environment shows it and the turn that published it. */
export interface ArtifactView extends ArtifactInfo {
  environmentPath: string;
  /** "" when no turn published it (see {@link ArtifactOperations.attribution}). */
  turnId: string;
}

export interface ArtifactListOptions {
  limit: number;
  order: "asc" | "desc";
  after?: string | undefined;
}

export class ArtifactOperations {
  constructor(
    private readonly deps: { store: Pick<Store, "readEvents" | "listTurns">; workspaceRoot: string },
  ) {}

  async list(s: SessionRecord, o: ArtifactListOptions): Promise<{ data: ArtifactView[]; has_more: boolean }> {
    let p: { data: ArtifactInfo[]; has_more: boolean };
    if (o.order === "desc") {
      // Newest path first: the walk only goes forward, so list everything (bounded) and page backwards.
      const all = listArtifacts(s.workspace).data.reverse();
      const after = o.after ? decodeArtifactId(o.after) : null;
      const rest = after === null ? all : all.filter((a) => a.path < after);
      p = { data: rest.slice(0, o.limit), has_more: rest.length > o.limit };
    } else {
      p = listArtifacts(s.workspace, { limit: o.limit, ...(o.after ? { after: o.after } : {}) });
    }
    const view = await this.views(s);
    return { data: p.data.map(view), has_more: p.has_more };
  }

  async get(s: SessionRecord, artifactId: string): Promise<ArtifactView> {
    return (await this.views(s))(statArtifact(s.workspace, artifactId));
  }

  /** The file's bytes and the content type to serve them with. */
  read(s: SessionRecord, artifactId: string): { info: ArtifactInfo; content: Buffer; contentType: string } {
    const { info, content } = readArtifact(s.workspace, artifactId);
    return { info, content, contentType: contentTypeFor(info.path) };
  }

  delete(s: SessionRecord, artifactId: string): ArtifactInfo {
    return deleteArtifact(s.workspace, artifactId);
  }

  /** The template's upload: a file written under the workspace root (the body names the path). */
  upload(body: unknown): UploadResult {
    return writeUpload(this.deps.workspaceRoot, body);
  }

  private async views(s: SessionRecord): Promise<(a: ArtifactInfo) => ArtifactView> {
    const turnOf = await this.attribution(s);
    const root = environmentRoot(s);
    return (a) => ({ ...a, environmentPath: environmentPath(root, a.path), turnId: turnOf(a) });
  }

  /**
   * The session turn that published a file: the one running when it was last written (turn and file times both
   * have sub-second precision), else the last turn that started before it was written. A file no turn wrote has
   * none: one the environment's preparation made (its files, packages, setup commands' output), or one written
   * before the first turn. The official type has no field for another publisher and requires a string: "".
   */
  private async attribution(s: SessionRecord): Promise<(a: ArtifactInfo) => string> {
    const turns = (await this.deps.store.listTurns(s.id, { limit: 1000, order: "asc" })).data.map((t) => ({
      id: t.id,
      from: t.started_at ?? t.created_at,
      to: t.completed_at ?? Infinity,
    }));
    const setupEnd = await this.setupEnd(s);
    return (a) => {
      let mtime: number;
      try {
        mtime = statSync(a.absPath).mtimeMs / 1000;
      } catch {
        mtime = a.modifiedAt;
      }
      if (setupEnd !== null && mtime <= setupEnd) return NO_TURN;
      const during = turns.find((t) => t.from <= mtime && mtime <= t.to);
      if (during) return during.id;
      return turns.filter((t) => t.from <= mtime).at(-1)?.id ?? NO_TURN;
    };
  }

  /**
   * When the session's environment was prepared, if that happened in the session's life (an inline
   * `openai_hosted` environment is prepared during its first turn); null otherwise (no environment, or one
   * prepared ahead, before the session existed).
   */
  private async setupEnd(s: SessionRecord): Promise<number | null> {
    if (s.extra.environment !== "openai_hosted") return null;
    for (const e of await this.deps.store.readEvents(s.id, 0, SETUP_EVENTS)) {
      if (e.type !== "environment.updated") continue;
      const status = e.data.environment.status;
      if (status === "ready" || status === "failed") return e.created_at;
    }
    return null;
  }
}
