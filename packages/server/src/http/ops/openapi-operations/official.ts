/** The official dialect's operations (`OpenAI-Beta: agents=v1`), as its OpenAPI document describes them. */
import type { Operation } from "./operation.js";

const SSE = "text/event-stream";

export const OFFICIAL: Record<string, Operation> = {
  "POST /v1/agents": {
    summary: "Create an agent",
    tag: "Agents",
    operationId: "createAgent",
    returns: "`agent`",
  },
  "GET /v1/agents": {
    summary: "List agents",
    tag: "Agents",
    operationId: "listAgents",
    returns: "A cursor page of `agent`",
  },
  "GET /v1/agents/{agent_id}": {
    summary: "Retrieve an agent",
    tag: "Agents",
    operationId: "retrieveAgent",
    returns: "`agent`",
  },
  "POST /v1/agents/{agent_id}": {
    summary: "Update an agent",
    tag: "Agents",
    operationId: "updateAgent",
    returns: "`agent`",
  },
  "DELETE /v1/agents/{agent_id}": {
    summary: "Delete an agent",
    tag: "Agents",
    operationId: "deleteAgent",
    returns: "`agent.deleted`",
  },
  "POST /v1/agents/sessions": {
    summary: "Create a session",
    description: "With `input` the first turn starts; with `stream: true` the session's events stream (SSE).",
    tag: "Sessions",
    operationId: "createSession",
    returns: "`agent.session`, or its event stream with `stream: true`",
    streams: true,
  },
  "GET /v1/agents/sessions": {
    summary: "List sessions",
    description: "Filters: `agent_id`, `metadata[key]=value`.",
    tag: "Sessions",
    operationId: "listSessions",
    returns: "A cursor page of `agent.session`",
  },
  "GET /v1/agents/sessions/{session_id}": {
    summary: "Retrieve a session",
    tag: "Sessions",
    operationId: "retrieveSession",
    returns: "`agent.session`",
  },
  "POST /v1/agents/sessions/{session_id}": {
    summary: "Update a session",
    tag: "Sessions",
    operationId: "updateSession",
    returns: "`agent.session`",
  },
  "DELETE /v1/agents/sessions/{session_id}": {
    summary: "Delete a session",
    tag: "Sessions",
    operationId: "deleteSession",
    returns: "`agent.session.deleted`",
  },
  "POST /v1/agents/sessions/{session_id}/events": {
    summary: "Send input events",
    description:
      "`agent.session.input.message` starts a turn (or steers the running one), `…input.cancel` interrupts it, " +
      "`…input.tool_result` / `…input.approval_result` answer required actions. Honours `Idempotency-Key`.",
    tag: "Events",
    operationId: "createSessionEvents",
    status: 202,
    returns: "Accepted (empty body)",
  },
  "GET /v1/agents/sessions/{session_id}/events": {
    summary: "Stream session events (SSE)",
    description:
      "Replays from `Last-Event-ID` (or `?after=`), or from the running turn's start, then tails live.",
    tag: "Events",
    operationId: "streamSessionEvents",
    media: SSE,
    returns: "`agent.session.*` events; every frame has an `id:`",
  },
  "GET /v1/agents/sessions/{session_id}/items": {
    summary: "List session items",
    tag: "Items",
    operationId: "listSessionItems",
    returns: "A cursor page of items (newest first by default)",
  },
  "GET /v1/agents/sessions/{session_id}/turns": {
    summary: "List turns",
    tag: "Turns",
    operationId: "listTurns",
    returns: "A cursor page of `agent.session.turn`",
  },
  "GET /v1/agents/sessions/{session_id}/turns/{turn_id}": {
    summary: "Retrieve a turn",
    tag: "Turns",
    operationId: "retrieveTurn",
    returns: "`agent.session.turn`",
  },
  "GET /v1/agents/sessions/{session_id}/turns/{turn_id}/items": {
    summary: "List a turn's items",
    tag: "Turns",
    operationId: "listTurnItems",
    returns: "A cursor page of items",
  },
  "GET /v1/agents/sessions/{session_id}/subagents": {
    summary: "List subagents",
    description: "Child threads the agent's multi-agent tools opened; their turns have `subagent_id` set.",
    tag: "Subagents",
    operationId: "listSubagents",
    returns: "A cursor page of `agent.session.subagent`",
  },
  "GET /v1/agents/sessions/{session_id}/subagents/{subagent_id}": {
    summary: "Retrieve a subagent",
    tag: "Subagents",
    operationId: "retrieveSubagent",
    returns: "`agent.session.subagent`",
  },
  "GET /v1/agents/sessions/{session_id}/subagents/{subagent_id}/items": {
    summary: "List a subagent's items",
    tag: "Subagents",
    operationId: "listSubagentItems",
    returns: "A cursor page of items",
  },
  "GET /v1/agents/sessions/{session_id}/artifacts": {
    summary: "List artifacts",
    tag: "Artifacts",
    operationId: "listArtifacts",
    returns: "A cursor page of `agent.session.artifact`",
  },
  "GET /v1/agents/sessions/{session_id}/artifacts/{artifact_id}": {
    summary: "Retrieve an artifact",
    description: "`artifact_id` is the unpadded base64url of the workspace-relative path.",
    tag: "Artifacts",
    operationId: "retrieveArtifact",
    returns: "`agent.session.artifact`",
  },
  "GET /v1/agents/sessions/{session_id}/artifacts/{artifact_id}/content": {
    summary: "Download an artifact",
    tag: "Artifacts",
    operationId: "retrieveArtifactContent",
    media: "application/octet-stream",
    returns: "The file's bytes",
  },
  "DELETE /v1/agents/sessions/{session_id}/artifacts/{artifact_id}": {
    summary: "Delete an artifact",
    tag: "Artifacts",
    operationId: "deleteArtifact",
    returns: "`agent.session.artifact.deleted`",
  },
  "GET /v1/agents/sessions/{session_id}/goal": {
    summary: "Retrieve the goal",
    tag: "Goals",
    operationId: "retrieveGoal",
    returns: "`agent.session.goal`",
  },
  "POST /v1/agents/sessions/{session_id}/goal": {
    summary: "Set, pause, resume or change the goal",
    description: "Setting or resuming an active goal starts a (logical) turn.",
    tag: "Goals",
    operationId: "updateGoal",
    returns: "`agent.session.goal`",
  },
  "DELETE /v1/agents/sessions/{session_id}/goal": {
    summary: "Clear the goal",
    tag: "Goals",
    operationId: "deleteGoal",
    returns: "`agent.session.goal.deleted`",
  },
};
