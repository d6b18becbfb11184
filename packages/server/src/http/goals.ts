import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../app.js";
import { conflict, notFound } from "../domain/errors.js";
import { goalObject, parseCaps } from "../domain/goals.js";
import type { Handlers } from "./routes.js";
import { parse } from "./validate.js";

type Params = { session_id: string };

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
 * The goal resource, the same in both dialects: GET reads it, POST sets/replaces the objective, pauses, resumes or
 * changes caps, DELETE clears it. Setting or resuming an active goal starts a (logical) turn on the session.
 */
export function goalHandlers(deps: AppDeps): Handlers {
  const { sessions } = deps;
  const { goals, runner } = sessions;

  const current = (sessionId: string) => {
    const g = goals.get(sessionId);
    if (!g) throw notFound("Session has no goal", "goal");
    return g;
  };

  return {
    getGoal: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      return goalObject(s.id, current(s.id));
    },

    setGoal: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      const b = parse(GoalBody, req.body);
      const caps = parseCaps(b as Record<string, unknown>, "goal");
      const running = runner.activeTurn(s.id);
      if (b.objective !== undefined) {
        if (running) throw conflict("Session has an active turn: interrupt it before replacing the goal");
        if ((b.status ?? "active") === "active") {
          sessions.startTurn(
            s.id,
            { items: [] },
            { goal: { mode: "objective", objective: b.objective, caps } },
          );
        } else {
          goals.resolveCaps(caps);
          const objective = b.objective.trim();
          const g = goals.create(s.id, objective, caps, "paused", null);
          await runner.withThread(s, async (thread) => {
            if (await thread.getGoal()) await thread.clearGoal();
            await thread.setGoal({ objective, status: "paused", tokenBudget: g.token_budget });
          });
        }
        return goalObject(s.id, current(s.id));
      }
      const goal = current(s.id);
      if (b.status === "active") {
        if (running) throw conflict("The goal is already running");
        sessions.startTurn(s.id, { items: [] }, { goal: { mode: "resume", caps } });
        return goalObject(s.id, current(s.id));
      }
      if (Object.keys(caps).length > 0) goals.update(s.id, goals.resolveCaps(caps, goal));
      if (b.status === "paused" && goal.status === "active") {
        if (!(await runner.pauseSessionGoal(s.id, "user_paused"))) {
          goals.update(s.id, { status: "paused", status_reason: "user_paused" });
        }
      }
      return goalObject(s.id, current(s.id));
    },

    clearGoal: async (req: FastifyRequest<{ Params: Params }>) => {
      const s = sessions.get(req.params.session_id);
      current(s.id);
      if (!(await runner.clearRunningGoal(s.id)) && s.thread_id) {
        await runner.withThread(s, (thread) => thread.clearGoal());
      }
      goals.delete(s.id);
      return { object: "agent.session.goal.deleted", session_id: s.id, deleted: true };
    },
  };
}
