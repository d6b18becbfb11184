import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ArtifactParams } from "../../http/validate.js";

export function artifactRoutes(app: App, { sessions, artifacts }: Application): void {
  app.get(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
    { schema: { params: ArtifactParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const { info, content } = artifacts.read(s, req.params.artifact_id);
      return {
        id: req.params.artifact_id,
        object: "artifact",
        session_id: s.id,
        file_path: info.path,
        content: content.toString("utf8"),
        size: info.size,
      };
    },
  );
  app.delete(
    "/v1/agents/sessions/:session_id/artifacts/:artifact_id",
    { schema: { params: ArtifactParams } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      artifacts.delete(s, req.params.artifact_id);
      return { id: req.params.artifact_id, object: "artifact", deleted: true };
    },
  );
  /** The original service's standard file route, confined to the workspace root. */
  app.post("/files/upload-stream", async (req) => artifacts.upload(req.body));
}
