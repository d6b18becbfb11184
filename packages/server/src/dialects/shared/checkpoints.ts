/**
 * Workspace checkpoints (this server's extension, under the session path in both dialects): list, read, diff (of a
 * checkpoint or a turn), a file's content, a checkpoint on request, restore (with dry run and conversation revert)
 * and fork (a new session from a checkpoint or from the end of a turn). Registered by each dialect plugin: errors
 * come in the dialect's shape, lists as the dialect lists (official: cursor pages; template: everything), a fork
 * answers with the new session as the dialect shows sessions.
 */

import type { FastifyReply } from "fastify";
import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ListQuery, SessionParams, TurnParams } from "../../http/validate.js";
import { badRequest } from "../../kernel/errors.js";
import { publicId } from "../../model/checkpoint-names.js";
import type { CheckpointInfo, DiffResult } from "../../model/checkpoints.js";
import type { SessionRecord } from "../../model/records.js";
import * as template from "../legacy/render.js";
import * as openai from "../openai/render.js";
import { checkpointObject, diffObject, restoreObject } from "./render/checkpoint.js";

const CheckpointParams = SessionParams.extend({ checkpoint_id: z.string().min(1).max(100) });

const flag = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

const ListCheckpoints = ListQuery.extend({ turn_id: z.string().min(1).optional() });

const DiffQuery = z.object({
  /** Another checkpoint to diff from (default: the checkpoint's parent). */
  from: z.string().min(1).optional(),
  /** Include the unified diff in the JSON. */
  patch: flag.optional(),
  /** `patch`: the unified diff itself (text/x-diff), not JSON. */
  format: z.enum(["json", "patch"]).optional(),
  max_patch_bytes: z.coerce.number().int().min(1).optional(),
});
const TurnDiffQuery = DiffQuery.omit({ from: true });

const FileQuery = z.object({ path: z.string().min(1).max(4096) });

const CreateBody = z.object({ label: z.string().max(200).optional() }).strict();
const RestoreBody = z
  .object({
    conversation: z.enum(["keep", "revert"]).optional(),
    dry_run: z.boolean().optional(),
  })
  .strict();
const ForkBody = z.object({ conversation: z.enum(["fork", "none"]).optional() }).strict();

export function checkpointRoutes(app: App, ops: Application, dialect: "openai" | "template"): void {
  const { sessions, checkpoints } = ops;
  const base = "/v1/agents/sessions/:session_id";

  const list = (all: CheckpointInfo[], q: z.infer<typeof ListQuery>) => {
    const data = all.map(checkpointObject);
    if (dialect === "template") return { object: "list", data };
    // Official cursor pages (newest first by default), `after` an id of the list.
    const ordered = q.order === "asc" ? data : data.reverse();
    const start = q.after ? ordered.findIndex((c) => c.id === q.after) + 1 : 0;
    if (q.after && start === 0) throw badRequest(`No checkpoint ${q.after} in this list`, "after");
    const limit = q.limit ?? 20;
    return openai.page({
      data: ordered.slice(start, start + limit),
      has_more: start + limit < ordered.length,
    });
  };

  const sendDiff = (
    reply: FastifyReply,
    s: SessionRecord,
    d: DiffResult,
    format: "json" | "patch" | undefined,
    turnId: string | null,
  ) => {
    if (format === "patch") {
      return reply
        .type("text/x-diff; charset=utf-8")
        .header("x-patch-truncated", String(d.diff.truncated ?? false))
        .header("x-checkpoint-from", d.from ? publicId(d.from) : "")
        .header("x-checkpoint-to", publicId(d.to))
        .send(d.diff.patch ?? "");
    }
    return diffObject(s.id, d, turnId);
  };

  const sessionOf = (s: SessionRecord) =>
    dialect === "openai" ? openai.sessionObject(s) : template.sessionObject(s);

  app.get(
    `${base}/checkpoints`,
    { schema: { params: SessionParams, querystring: ListCheckpoints } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const all = await checkpoints.list(s, req.query.turn_id ? { turnId: req.query.turn_id } : {});
      return list(all, req.query);
    },
  );

  app.post(
    `${base}/checkpoints`,
    { schema: { params: SessionParams, body: CreateBody } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const { checkpoint, created } = await checkpoints.create(s, req.body.label);
      return reply.code(created ? 201 : 200).send(checkpointObject(checkpoint));
    },
  );

  app.get(`${base}/checkpoints/:checkpoint_id`, { schema: { params: CheckpointParams } }, async (req) => {
    const s = await sessions.get(req.scope, req.params.session_id);
    return checkpointObject(await checkpoints.get(s, req.params.checkpoint_id));
  });

  app.get(
    `${base}/checkpoints/:checkpoint_id/diff`,
    { schema: { params: CheckpointParams, querystring: DiffQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const q = req.query;
      const d = await checkpoints.diff(s, req.params.checkpoint_id, {
        ...(q.from ? { from: q.from } : {}),
        patch: q.format === "patch" || (q.patch ?? false),
        ...(q.max_patch_bytes ? { maxPatchBytes: q.max_patch_bytes } : {}),
      });
      return sendDiff(reply, s, d, q.format, null);
    },
  );

  app.get(
    `${base}/checkpoints/:checkpoint_id/file`,
    { schema: { params: CheckpointParams, querystring: FileQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const content = await checkpoints.file(s, req.params.checkpoint_id, req.query.path);
      return reply.type("application/octet-stream").header("x-content-length", content.length).send(content);
    },
  );

  app.post(
    `${base}/checkpoints/:checkpoint_id/restore`,
    { schema: { params: CheckpointParams, body: RestoreBody } },
    async (req) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const r = await checkpoints.restore(s, req.params.checkpoint_id, {
        dryRun: req.body.dry_run ?? false,
        conversation: req.body.conversation ?? "keep",
      });
      return restoreObject(s.id, r);
    },
  );

  app.post(
    `${base}/checkpoints/:checkpoint_id/fork`,
    { schema: { params: CheckpointParams, body: ForkBody } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const f = await checkpoints.fork(
        req.scope,
        s,
        { checkpoint: req.params.checkpoint_id },
        {
          conversation: req.body.conversation ?? "fork",
        },
      );
      return reply.code(201).send(forkBody(f));
    },
  );

  app.get(
    `${base}/turns/:turn_id/diff`,
    { schema: { params: TurnParams, querystring: TurnDiffQuery } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const turn = await sessions.turn(s, req.params.turn_id);
      const q = req.query;
      const d = await checkpoints.turnDiff(s, turn, {
        patch: q.format === "patch" || (q.patch ?? false),
        ...(q.max_patch_bytes ? { maxPatchBytes: q.max_patch_bytes } : {}),
      });
      return sendDiff(reply, s, d, q.format, turn.id);
    },
  );

  app.post(
    `${base}/turns/:turn_id/fork`,
    { schema: { params: TurnParams, body: ForkBody } },
    async (req, reply) => {
      const s = await sessions.get(req.scope, req.params.session_id);
      const turn = await sessions.turn(s, req.params.turn_id);
      const f = await checkpoints.fork(
        req.scope,
        s,
        { turn },
        { conversation: req.body.conversation ?? "fork" },
      );
      return reply.code(201).send(forkBody(f));
    },
  );

  function forkBody(f: Awaited<ReturnType<typeof checkpoints.fork>>) {
    return {
      ...sessionOf(f.session),
      forked_from: {
        session_id: f.from.session_id,
        checkpoint_id: publicId(f.from.checkpoint_id),
        turn_id: f.from.turn_id,
        conversation_turns: f.conversationTurns,
      },
      checkpoint: checkpointObject(f.checkpoint),
    };
  }
}
