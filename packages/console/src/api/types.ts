/** API objects as the official `openai` SDK types them, plus this server's extensions (goals, /health). */
import type {
  Agent,
  AgentOutputItem,
  AgentSession,
  AgentSessionEvent,
  AgentSessionItem,
  TokenUsage,
} from "openai/resources/beta/agents/agents";
import type { SessionArtifact } from "openai/resources/beta/agents/sessions/artifacts";
import type { Turn } from "openai/resources/beta/agents/sessions/turns/turns";

export type { Agent, AgentSession, AgentSessionEvent, SessionArtifact, TokenUsage, Turn };

/** What the items API returns and what the stream's item events carry. */
export type Item = AgentSessionItem | AgentOutputItem;

export type SessionStatus = AgentSession["status"];

/** A function call of the agent's own tools waiting for the client's result. */
export type FunctionCallAction = Extract<AgentSession["required_actions"][number], { type: "function_call" }>;

/** A command, file change or MCP request waiting for a person's decision (this server's extension). */
export interface ApprovalAction {
  type: "approval_request";
  action_id: string;
  turn_id: string;
  kind: string;
  item_id: string | null;
  message: string | null;
  details: Record<string, unknown> | null;
  decisions: ApprovalDecision[];
}

export type ApprovalDecision = "approve" | "approve_for_session" | "deny" | "cancel";

/** What `session.required_actions` holds on this server. */
export type RequiredAction = FunctionCallAction | ApprovalAction;

/** The goal resource (GET/POST/DELETE /v1/agents/sessions/{id}/goal): an extension of this server. */
export interface Goal {
  object: "agent.session.goal";
  session_id: string;
  objective: string;
  status: "active" | "paused" | "blocked" | "usage_limited" | "budget_limited" | "complete";
  status_reason: string | null;
  token_budget: number | null;
  tokens_used: number;
  max_turns: number | null;
  turns_used: number;
  max_duration_seconds: number | null;
  time_used_seconds: number;
  turn_id: string | null;
  created_at: number;
  updated_at: number;
}

/** Caps a client may give when it starts a goal (missing ones take the server's defaults). */
export interface GoalCaps {
  max_turns?: number;
  token_budget?: number;
  max_duration_seconds?: number;
}

/** `agent.session.goal.updated`: on the session stream of this server, not in the SDK's event union. */
export interface GoalUpdatedEvent {
  type: "agent.session.goal.updated";
  event_id: string;
  session_id: string;
  turn_id: string | null;
  goal: Goal | null;
}

export type StreamEvent = AgentSessionEvent | GoalUpdatedEvent;

/** GET /health. */
export interface Health {
  status: string;
  engines: Array<{ index: number; running: boolean; threads: number }>;
  active_turns: number;
  /** Where the agents' commands run: the engine's sandbox on the host, or a container per session (counts). */
  sandboxes?:
    | { backend: "local" }
    | { backend: "container"; warm: number; creating: number; in_use: number; stopped: number };
}
