/**
 * What the OpenAPI documents say about each operation beyond its request schemas (which come from the routes' zod
 * schemas): summary, tag, operation id and responses, per dialect. A route missing here is still documented (with
 * a derived id and a generic response), so the documents never leave a route out.
 */
import type { Dialect } from "../dialect.js";

type JsonSchema = Record<string, unknown>;

export interface Operation {
  summary: string;
  description?: string;
  tag: string;
  operationId: string;
  /** The success status and what it carries. */
  status?: number;
  /** Default `application/json`. */
  media?: "application/json" | "text/event-stream" | "application/octet-stream" | "text/plain";
  /** What a success response is (description; an object id when it is one). */
  returns: string;
  /** A success response that is either JSON or a stream (template requests with `stream: true`). */
  streams?: boolean;
  /** The request is `multipart/form-data` with these fields (a JSON Schema of the form), not JSON. */
  form?: JsonSchema;
}

const SSE = "text/event-stream";

/** Routes served to both dialects (no dialect constraint): the same in both documents. */
const SHARED: Record<string, Operation> = {
  "GET /health": {
    summary: "Liveness and engine state",
    tag: "Operations",
    operationId: "getHealth",
    returns:
      "`{status: ok | degraded | fenced, model: {reachable, reason, since}, engines, active_turns, cluster, checkpoints}`; open to everyone (503 only when fenced)",
  },
  "GET /metrics": {
    summary: "Prometheus metrics",
    description: "Needs the operator token or an admin API key when authentication is on.",
    tag: "Operations",
    operationId: "getMetrics",
    media: "text/plain",
    returns: "Prometheus text exposition format",
  },
  "GET /v1/agents/sessions/{session_id}/traces": {
    summary: "List turn traces (OTLP JSON)",
    description:
      "One `agent.session.trace` per ended turn, newest first: `otlp` is an OTLP JSON ExportTraceServiceRequest " +
      "with the turn's root span and a child span per item. Running turns are not listed yet.",
    tag: "Traces",
    operationId: "listSessionTraces",
    returns: "A cursor page of `agent.session.trace`",
  },
  // The Files API: its SDK methods send no `OpenAI-Beta` header, so it answers in the official shapes either way.
  "POST /v1/files": {
    summary: "Upload a file",
    description:
      "`multipart/form-data` (the only route that takes it, and only with an `Authorization` or `X-Access-Token` " +
      "header): `file`, `purpose`, optional `expires_after[anchor]=created_at` and `expires_after[seconds]` " +
      "(3600–2592000). Streamed to disk; larger than `--file-size-limit` is 413. `Idempotency-Key` is honoured.",
    tag: "Files",
    operationId: "createFile",
    returns: "`file`",
    form: {
      type: "object",
      required: ["file", "purpose"],
      properties: {
        file: { type: "string", format: "binary" },
        purpose: {
          type: "string",
          enum: ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"],
        },
        "expires_after[anchor]": { type: "string", enum: ["created_at"] },
        "expires_after[seconds]": { type: "integer", minimum: 3600, maximum: 2592000 },
      },
    },
  },
  "GET /v1/files": {
    summary: "List files",
    description: "Newest first unless `order=asc`; `purpose` filters. Expired files are not listed.",
    tag: "Files",
    operationId: "listFiles",
    returns: "A cursor page of `file`",
  },
  "GET /v1/files/{file_id}": {
    summary: "Retrieve a file",
    tag: "Files",
    operationId: "retrieveFile",
    returns: "`file`",
  },
  "GET /v1/files/{file_id}/content": {
    summary: "Download a file's contents",
    tag: "Files",
    operationId: "downloadFile",
    media: "application/octet-stream",
    returns: "The file's bytes",
  },
  "DELETE /v1/files/{file_id}": {
    summary: "Delete a file",
    description: "Environments it was copied into keep their copies.",
    tag: "Files",
    operationId: "deleteFile",
    returns: '`{id, object: "file", deleted: true}`',
  },
};

const OFFICIAL: Record<string, Operation> = {
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

const TEMPLATE: Record<string, Operation> = {
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

/** Repositories of a session's environment (this server's extension): the same in both dialects. */
const REPOSITORIES: Record<string, Operation> = {
  "GET /v1/agents/sessions/{session_id}/repositories": {
    summary: "List the repositories of a session's environment",
    description:
      "Each with its base commit, the branch checked out in the workspace, its output setting and the outputs so far.",
    tag: "Repositories",
    operationId: "listSessionRepositories",
    returns: "A list of `agent.session.repository`",
  },
  "GET /v1/agents/sessions/{session_id}/repositories/{index}/diff": {
    summary: "Diff a repository's workspace against its base",
    description:
      "`format=diff` (default): a unified diff (`text/x-diff`); `format=patch`: a `git format-patch` series " +
      "(`application/mbox`) of the outputs and of what is not committed yet.",
    tag: "Repositories",
    operationId: "diffSessionRepository",
    media: "text/plain",
    returns: "The diff or patch series",
  },
  "POST /v1/agents/sessions/{session_id}/repositories/{index}/outputs": {
    summary: "Commit and push a repository's changes now",
    description:
      "`{branch?, push?, message?}`: commits what changed onto the branch (default: the output setting's, or " +
      "`codex/<session id>`) and pushes it; 200 with `output: null` when nothing changed since the last output.",
    tag: "Repositories",
    operationId: "createSessionRepositoryOutput",
    status: 201,
    returns: "`agent.session.repository_output`",
  },
};

/** `/v1/agents/:agent_id` → `/v1/agents/{agent_id}` (OpenAPI path templates). */
export const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function derived(method: string, path: string): Operation {
  const words = path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1));
  return {
    summary: `${method} ${path}`,
    tag: "Other",
    operationId: method.toLowerCase() + words.join(""),
    returns: "Success",
  };
}

export function operationOf(dialect: Dialect, method: string, url: string, shared: boolean): Operation {
  const key = `${method} ${openapiPath(url)}`;
  return (
    (shared ? SHARED[key] : ((dialect === "openai" ? OFFICIAL : TEMPLATE)[key] ?? REPOSITORIES[key])) ??
    derived(method, url)
  );
}

/** The official error body. */
export const OFFICIAL_ERROR: JsonSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "param", "code"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: ["string", "null"] },
      },
    },
  },
};

/** The template's error body. */
export const TEMPLATE_ERROR: JsonSchema = {
  type: "object",
  required: ["error", "type"],
  properties: {
    error: { type: "string", description: "What went wrong" },
    type: { type: "string", description: "The error class, e.g. NotFoundError, ValueError, AuthError" },
  },
};
