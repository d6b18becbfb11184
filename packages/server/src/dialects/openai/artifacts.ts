import { statSync } from "node:fs";
import type { SessionArtifact } from "openai/resources/beta/agents/sessions/artifacts";
import { z } from "zod";
import type { App } from "../../http/app-types.js";
import { ArtifactParams, ListQuery, SessionParams } from "../../http/validate.js";
import type { Core } from "../../main/compose.js";
import type { SessionRecord } from "../../model/records.js";
import { environmentPath, environmentRoot } from "../../platform/workspace/environment-paths.js";
import {
  type ArtifactInfo,
  contentTypeFor,
  decodeArtifactId,
  deleteArtifact,
  listArtifacts,
  readArtifact,
  statArtifact,
} from "../../platform/workspace/index.js";
import type { Store } from "../../store/types.js";
import * as openai from "./render.js";

/** The `turn_id` of a file no turn published. */
const NO_TURN = "";

/** How many events at the start of a session's log are searched for the end of its environment's preparation. */
const SETUP_EVENTS = 200;

/**
 * When the session's environment was prepared, if that happened in the session's life (an inline `openai_hosted`
 * environment is prepared during its first turn: its files, packages and setup commands' output are written before
 * it is ready); null otherwise (no environment, or one prepared ahead, before the session existed).
 */
async function setupEndOf(store: Store, s: SessionRecord): Promise<number | null> {
  if (s.extra.environment !== "openai_hosted") return null;
  for (const e of await store.readEvents(s.id, 0, SETUP_EVENTS)) {
    if (e.type !== "environment.updated") continue;
    const status = e.data.environment.status;
    if (status === "ready" || status === "failed") return e.created_at;
  }
  return null;
}

/**
 * The session turn that published a file: the one running when it was last written (turn and file times both have
 * sub-second precision), else the last turn that started before it was written. A file no turn wrote has none: one
 * the environment's preparation made (its files, packages, setup commands' output), or one written before the first
 * turn. The official type has no field for another publisher and requires a string (of length 0 or more): "".
 */
async function turnAttribution(store: Store, s: SessionRecord): Promise<(a: ArtifactInfo) => string> {
  const turns = (await store.listTurns(s.id, { limit: 1000, order: "asc" })).data.map((t) => ({
    id: t.id,
    from: t.started_at ?? t.created_at,
    to: t.completed_at ?? Infinity,
  }));
  const setupEnd = await setupEndOf(store, s);
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
 * A workspace file as an official artifact: its path inside the session's environment (`/workspace/…`, the same as
 * the environment's file listing shows; never this host's directory), the environment it is in, the turn that
 * published it ("" when none did: see {@link turnAttribution}).
 */
function artifactObject(
  s: SessionRecord,
  a: ArtifactInfo,
  turnOf: (a: ArtifactInfo) => string,
): SessionArtifact {
  return {
    id: a.id,
    object: "agent.session.artifact",
    session_id: s.id,
    turn_id: turnOf(a),
    environment_id: openai.environmentIdOf(s),
    path: environmentPath(environmentRoot(s), a.path),
    size_bytes: a.size,
    created_at: Math.floor(a.createdAt),
  };
}

/**
 * Files in the session workspace, as official artifacts (id = base64url of the relative path), listed in path
 * order (`order=desc`: reverse path order).
 */
export function artifactRoutes(app: App, core: Core): void {
  artifactListRoutes(app, core);
  const { sessions, store } = core;
  app.get(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
    { schema: { params: ArtifactParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      return artifactObject(
        s,
        statArtifact(s.workspace, req.params.artifact_id),
        await turnAttribution(store, s),
      );
    },
  );
  app.delete(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
    { schema: { params: ArtifactParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const info = deleteArtifact(s.workspace, req.params.artifact_id);
      return { id: info.id, object: "agent.session.artifact.deleted", deleted: true };
    },
  );
}

const ArtifactListQuery = ListQuery.extend({ environment_id: z.string().optional() });

/** Listing and raw content: also served to template clients, in the official format (the template had none). */
export function artifactListRoutes(app: App, core: Core): void {
  const { sessions, store } = core;
  app.get(
    "/v1/agents/sessions/:session_id/artifacts",
    { schema: { params: SessionParams, querystring: ArtifactListQuery } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const q = req.query;
      // Every artifact is in the session's environment: another environment has none.
      if (q.environment_id !== undefined && q.environment_id !== openai.environmentIdOf(s)) {
        return openai.page({ data: [], has_more: false });
      }
      const limit = q.limit ?? 20;
      let p: { data: ArtifactInfo[]; has_more: boolean };
      if (q.order === "desc") {
        // Newest path first: the walk only goes forward, so list everything (bounded) and page backwards.
        const all = listArtifacts(s.workspace).data.reverse();
        const after = q.after ? decodeArtifactId(q.after) : null;
        const rest = after === null ? all : all.filter((a) => a.path < after);
        p = { data: rest.slice(0, limit), has_more: rest.length > limit };
      } else {
        p = listArtifacts(s.workspace, { limit, ...(q.after ? { after: q.after } : {}) });
      }
      const turnOf = await turnAttribution(store, s);
      return openai.page({ data: p.data.map((a) => artifactObject(s, a, turnOf)), has_more: p.has_more });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id/content",
    { schema: { params: ArtifactParams } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const { info, content } = readArtifact(s.workspace, req.params.artifact_id);
      return (
        reply
          .header("content-type", contentTypeFor(info.path))
          .header("content-length", String(content.length))
          // The agent wrote it: never let a browser run it on this origin (an .html or .svg artifact).
          .header("x-content-type-options", "nosniff")
          .header(
            "content-security-policy",
            "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'",
          )
          .send(content)
      );
    },
  );
}
