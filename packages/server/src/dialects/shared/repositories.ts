/**
 * Repositories of a session's environment (this server's extension, under the session path in both dialects):
 * list them, diff the workspace against the base (`format=diff`: a unified diff; `format=patch`: a `git
 * format-patch` series of what was committed and what is not yet), and hand the changes back on request (commit onto
 * a branch, push it). Registered by each dialect plugin: errors come in the dialect's shape.
 */
import { z } from "zod";
import type { RepositoryOperations } from "../../application/repositories.js";
import type { App } from "../../http/app-types.js";
import { SessionParams } from "../../http/validate.js";
import { repositoryObject, repositoryOutputFields } from "./render/repository.js";

const RepositoryParams = SessionParams.extend({ index: z.coerce.number().int().min(0).max(99) });
const DiffQuery = z.object({ format: z.enum(["diff", "patch"]).optional() }).strict();
const OutputBody = z
  .object({
    branch: z.string().min(1).max(200).nullable().optional(),
    push: z.boolean().optional(),
    message: z.string().min(1).max(10_000).nullable().optional(),
  })
  .strict();

export function repositoryRoutes(app: App, repositories: RepositoryOperations): void {
  const base = "/v1/agents/sessions/:session_id/repositories";

  app.get(base, { schema: { params: SessionParams } }, async (req) => {
    const id = req.params.session_id;
    const data = (await repositories.list(req.scope, id)).map((r) => repositoryObject(id, r));
    return { object: "list", data, first_id: null, last_id: null, has_more: false };
  });

  app.get(
    `${base}/:index/diff`,
    { schema: { params: RepositoryParams, querystring: DiffQuery } },
    async (req, reply) => {
      const format = req.query.format ?? "diff";
      const text = await repositories.diff(req.scope, req.params.session_id, req.params.index, format);
      return reply.type(format === "patch" ? "application/mbox" : "text/x-diff; charset=utf-8").send(text);
    },
  );

  app.post(
    `${base}/:index/outputs`,
    { schema: { params: RepositoryParams, body: OutputBody } },
    async (req, reply) => {
      const b = req.body;
      const item = await repositories.output(req.scope, req.params.session_id, req.params.index, {
        ...(b.branch !== undefined ? { branch: b.branch } : {}),
        ...(b.push !== undefined ? { push: b.push } : {}),
        ...(b.message !== undefined ? { message: b.message } : {}),
      });
      if (!item) {
        return reply
          .code(200)
          .send({ object: "agent.session.repository_output", output: null, changed: false });
      }
      return reply.code(201).send({
        object: "agent.session.repository_output",
        changed: true,
        output: { id: item.id, ...repositoryOutputFields(item) },
      });
    },
  );
}
