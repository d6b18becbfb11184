import type { FastifyRequest } from "fastify";
import type { AppDeps } from "../../app.js";
import type { SessionRecord } from "../../store/types.js";
import {
  type ArtifactInfo,
  contentTypeFor,
  deleteArtifact,
  listArtifacts,
  readArtifact,
  statArtifact,
} from "../../workspace/index.js";
import type { Handlers } from "../routes.js";
import { ListQuery, parse } from "../validate.js";

type Params = { session_id: string };
type ArtifactParams = { session_id: string; artifact_id: string };

function artifactObject(s: SessionRecord, a: ArtifactInfo) {
  return {
    id: a.id,
    object: "agent.session.artifact",
    session_id: s.id,
    turn_id: s.active_turn_id ?? null,
    environment_id: "env_local",
    path: a.absPath,
    size_bytes: a.size,
    created_at: Math.floor(a.createdAt),
  };
}

/** Files in the session workspace, as official artifacts (id = base64url of the relative path). */
export function openaiArtifactHandlers(deps: AppDeps): Handlers {
  const { sessions } = deps;
  return {
    listArtifacts: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      const q = parse(ListQuery, req.query, "query");
      const p = listArtifacts(s.workspace, { limit: q.limit ?? 20, ...(q.after ? { after: q.after } : {}) });
      const data = p.data.map((a) => artifactObject(s, a));
      return {
        object: "list",
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: p.has_more,
      };
    },
    getArtifact: async (req: FastifyRequest<{ Params: ArtifactParams }>) => {
      const s = sessions.get(req.params.session_id);
      return artifactObject(s, statArtifact(s.workspace, req.params.artifact_id));
    },
    getArtifactContent: async (req: FastifyRequest<{ Params: ArtifactParams }>, reply) => {
      const s = sessions.get(req.params.session_id);
      const { info, content } = readArtifact(s.workspace, req.params.artifact_id);
      return reply
        .header("content-type", contentTypeFor(info.path))
        .header("content-length", String(content.length))
        .send(content);
    },
    deleteArtifact: async (req: FastifyRequest<{ Params: ArtifactParams }>) => {
      const s = sessions.get(req.params.session_id);
      const info = deleteArtifact(s.workspace, req.params.artifact_id);
      return { id: info.id, object: "agent.session.artifact.deleted", deleted: true };
    },
  };
}
