/** The template dialect's operations, as its OpenAPI document describes them (goals are the official ones). */
import { OFFICIAL } from "./official.js";
import type { Operation } from "./operation.js";

export const TEMPLATE: Record<string, Operation> = {
  "POST /v1/agents": {
    summary: "Create an agent",
    tag: "Agents",
    operationId: "createAgent",
    returns: "The agent",
  },
  "GET /v1/agents": {
    summary: "List agents",
    tag: "Agents",
    operationId: "listAgents",
    returns: "`{object: list, data}`",
  },
  "GET /v1/agents/{agent_id}": {
    summary: "Retrieve an agent",
    tag: "Agents",
    operationId: "retrieveAgent",
    returns: "The agent",
  },
  "POST /v1/agents/{agent_id}": {
    summary: "Update an agent",
    tag: "Agents",
    operationId: "updateAgent",
    returns: "The agent",
  },
  "DELETE /v1/agents/{agent_id}": {
    summary: "Delete an agent",
    tag: "Agents",
    operationId: "deleteAgent",
    returns: "`{id, deleted}`",
  },
  "POST /v1/agents/sessions": {
    summary: "Create a session",
    description:
      "With `input` a first turn runs; with `stream: true` the turn streams (SSE) from this request.",
    tag: "Sessions",
    operationId: "createSession",
    returns: "`session`, or the turn's event stream with `stream: true`",
    streams: true,
  },
  "GET /v1/agents/sessions": {
    summary: "List sessions",
    tag: "Sessions",
    operationId: "listSessions",
    returns: "`{object: list, data}`",
  },
  "GET /v1/agents/sessions/{session_id}": {
    summary: "Retrieve a session",
    description: "The session with its last items as `output` and its summed usage.",
    tag: "Sessions",
    operationId: "retrieveSession",
    returns: "`session`",
  },
  "POST /v1/agents/sessions/{session_id}": {
    summary: "Update a session",
    tag: "Sessions",
    operationId: "updateSession",
    returns: "`session`",
  },
  "DELETE /v1/agents/sessions/{session_id}": {
    summary: "Delete a session",
    tag: "Sessions",
    operationId: "deleteSession",
    returns: "`{id, deleted}`",
  },
  "POST /v1/agents/sessions/{session_id}/actions/{action_id}": {
    summary: "Answer a required action",
    description: "A function call's result or an approval decision.",
    tag: "Events",
    operationId: "answerAction",
    returns: "`{id, status}`",
  },
  "POST /v1/agents/sessions/{session_id}/events": {
    summary: "Send input (a turn streams from this request)",
    description:
      "`{input}` runs a turn and streams it (SSE) unless `stream: false`; a second input during a turn is 409 " +
      "unless `steer: true`; `{type: 'agent.session.input.cancel'}` interrupts the turn.",
    tag: "Events",
    operationId: "sendSessionEvent",
    returns: "The turn's events (SSE), or JSON for steer/cancel/`stream: false`",
    streams: true,
  },
  "GET /v1/agents/sessions/{session_id}/events": {
    summary: "Follow the running turn (SSE)",
    description:
      'Idle: `{"status", "message": "No active turn"}`. Resumes from `Last-Event-ID` or `?after=`.',
    tag: "Events",
    operationId: "streamSessionEvents",
    returns: "The running turn's events (SSE), or the idle status as JSON",
    streams: true,
  },
  "GET /v1/agents/sessions/{session_id}/items": {
    summary: "List session items",
    tag: "Items",
    operationId: "listSessionItems",
    returns: "`{object: list, data}` of Codex items",
  },
  "GET /v1/agents/sessions/{session_id}/turns": {
    summary: "List turns (official format)",
    tag: "Turns",
    operationId: "listTurns",
    returns: "A cursor page of `agent.session.turn`",
  },
  "GET /v1/agents/sessions/{session_id}/turns/{turn_id}": {
    summary: "Retrieve a turn (official format)",
    tag: "Turns",
    operationId: "retrieveTurn",
    returns: "`agent.session.turn`",
  },
  "GET /v1/agents/sessions/{session_id}/artifacts": {
    summary: "List artifacts (official format)",
    tag: "Artifacts",
    operationId: "listArtifacts",
    returns: "A cursor page of `agent.session.artifact`",
  },
  "GET /v1/agents/sessions/{session_id}/artifacts/{artifact_id}": {
    summary: "Download an artifact",
    description: "`artifact_id` is the unpadded base64url of the workspace-relative path.",
    tag: "Artifacts",
    operationId: "downloadArtifact",
    media: "application/octet-stream",
    returns: "The file's bytes",
  },
  "GET /v1/agents/sessions/{session_id}/artifacts/{artifact_id}/content": {
    summary: "Download an artifact (official path)",
    tag: "Artifacts",
    operationId: "retrieveArtifactContent",
    media: "application/octet-stream",
    returns: "The file's bytes",
  },
  "DELETE /v1/agents/sessions/{session_id}/artifacts/{artifact_id}": {
    summary: "Delete an artifact",
    tag: "Artifacts",
    operationId: "deleteArtifact",
    returns: "`{id, deleted}`",
  },
  "POST /files/upload-stream": {
    summary: "Upload a file into the workspace",
    tag: "Artifacts",
    operationId: "uploadFile",
    returns: "Where the file was written",
  },
  "GET /v1/agents/sessions/{session_id}/goal": OFFICIAL["GET /v1/agents/sessions/{session_id}/goal"]!,
  "POST /v1/agents/sessions/{session_id}/goal": OFFICIAL["POST /v1/agents/sessions/{session_id}/goal"]!,
  "DELETE /v1/agents/sessions/{session_id}/goal": OFFICIAL["DELETE /v1/agents/sessions/{session_id}/goal"]!,
};
