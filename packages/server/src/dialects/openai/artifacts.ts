import type { SessionArtifact } from "openai/resources/beta/agents/sessions/artifacts";
import { z } from "zod";
import type { ArtifactView } from "../../application/artifacts.js";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ArtifactParams, ListQuery, SessionParams } from "../../http/validate.js";
import type { SessionRecord } from "../../model/records.js";
import * as openai from "./render.js";

/**
 * A workspace file as an official artifact: its path inside the session's environment (`/workspace/…`, the same as
 * the environment's file listing shows; never this host's directory), the environment it is in, the turn that
 * published it ("" when none did).
 */
function artifactObject(s: SessionRecord, a: ArtifactView): SessionArtifact {
  return {
    id: a.id,
    object: "agent.session.artifact",
    session_id: s.id,
    turn_id: a.turnId,
    environment_id: openai.environmentIdOf(s),
    path: a.environmentPath,
    size_bytes: a.size,
    created_at: Math.floor(a.createdAt),
  };
}

/**
 * Files in the session workspace, as official artifacts (id = base64url of the relative path), listed in path
 * order (`order=desc`: reverse path order).
 */
export function artifactRoutes(app: App, ops: Application): void {
  artifactListRoutes(app, ops);
  const { sessions, artifacts } = ops;
  app.get(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
    { schema: { params: ArtifactParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      return artifactObject(s, await artifacts.get(s, req.params.artifact_id));
    },
  );
  app.delete(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
    { schema: { params: ArtifactParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const info = artifacts.delete(s, req.params.artifact_id);
      return { id: info.id, object: "agent.session.artifact.deleted", deleted: true };
    },
  );
}

const ArtifactListQuery = ListQuery.extend({ environment_id: z.string().optional() });

/** Listing and raw content: also served to template clients, in the official format (the template had none). */
export function artifactListRoutes(app: App, { sessions, artifacts }: Application): void {
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
      const p = await artifacts.list(s, {
        limit: q.limit ?? 20,
        order: q.order === "desc" ? "desc" : "asc",
        after: q.after,
      });
      return openai.page({ data: p.data.map((a) => artifactObject(s, a)), has_more: p.has_more });
    },
  );
  app.get(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id/content",
    { schema: { params: ArtifactParams } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const { content, contentType } = artifacts.read(s, req.params.artifact_id);
      return (
        reply
          .header("content-type", contentType)
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
