import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../../app.js";
import { deleteArtifact, readArtifact, writeUpload } from "../../workspace/index.js";

type Params = { session_id: string; artifact_id: string };

export function artifactRoutes(app: FastifyInstance, deps: AppDeps): void {
  const { sessions, config } = deps;

  app.get<{ Params: Params }>("/v1/agents/sessions/:session_id/artifacts/:artifact_id", async (req) => {
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
  });

  app.delete<{ Params: Params }>("/v1/agents/sessions/:session_id/artifacts/:artifact_id", async (req) => {
    const s = sessions.get(req.params.session_id);
    deleteArtifact(s.workspace, req.params.artifact_id);
    return { id: req.params.artifact_id, object: "artifact", deleted: true };
  });

  /** The original service's standard file route, confined to the workspace root. */
  app.post("/files/upload-stream", async (req) => writeUpload(config.workspaceRoot, req.body));
}
