import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { SessionParams } from "../../http/validate.js";
import { goalObject } from "./render/goal.js";

const GoalBody = z
  .object({
    objective: z.string().min(1).max(4000).optional(),
    status: z.enum(["active", "paused"]).optional(),
    token_budget: z.number().int().positive().nullable().optional(),
    max_turns: z.number().int().min(0).nullable().optional(),
    max_duration_seconds: z.number().int().positive().nullable().optional(),
  })
  .strict();

/**
 * The goal resource, the same in both dialects (registered by each): GET reads it; POST sets or replaces the
 * objective, pauses, resumes or changes caps; DELETE clears it. Setting or resuming an active goal starts a
 * (logical) turn on the session.
 */
export function goalRoutes(app: App, { sessions, goals, clock }: Application): void {
  const path = "/v1/agents/sessions/:session_id/goal";
  app.get(path, { schema: { params: SessionParams } }, async (req) => {
    const s = await sessions.get(req.scope, req.params.session_id);
    return goalObject(await goals.get(s), clock.now());
  });
  app.post(path, { schema: { params: SessionParams, body: GoalBody } }, async (req) => {
    const s = await sessions.get(req.scope, req.params.session_id);
    const { objective, status, ...caps } = req.body;
    const g = await goals.change(s, {
      ...(objective !== undefined ? { objective } : {}),
      ...(status !== undefined ? { status } : {}),
      caps: {
        ...(caps.token_budget != null ? { token_budget: caps.token_budget } : {}),
        ...(caps.max_turns != null ? { max_turns: caps.max_turns } : {}),
        ...(caps.max_duration_seconds != null ? { max_duration_seconds: caps.max_duration_seconds } : {}),
      },
    });
    return goalObject(g, clock.now());
  });
  app.delete(path, { schema: { params: SessionParams } }, async (req) => {
    const s = await sessions.get(req.scope, req.params.session_id);
    await goals.clear(s);
    return { object: "agent.session.goal.deleted", session_id: s.id, deleted: true };
  });
}
