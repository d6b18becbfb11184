import type { FastifyRequest } from "fastify";
import type { AppDeps } from "../../app.js";
import { deleteArtifact, readArtifact, writeUpload } from "../../workspace/index.js";
import type { Handlers } from "../routes.js";

type Params = { session_id: string; artifact_id: string };

export function templateArtifactHandlers(deps: AppDeps): Handlers {
  const { sessions, config } = deps;
  return {
    getArtifact: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      const { info, content } = readArtifact(s.workspace, req.params.artifact_id);
      return {
        id: req.params.artifact_id,
        object: "artifact",
        session_id: s.id,
        file_path: info.path,
        content: content.toString("utf8"),
        size: info.size,
      };
    },

    deleteArtifact: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      deleteArtifact(s.workspace, req.params.artifact_id);
      return { id: req.params.artifact_id, object: "artifact", deleted: true };
    },

    /** The original service's standard file route, confined to the workspace root. */
    uploadFile: async (req) => writeUpload(config.workspaceRoot, req.body),
  };
}
