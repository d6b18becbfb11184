/**
 * The operations described alike in both dialects' documents: the routes served to both (health, metrics, traces,
 * the Files API), and the repositories of a session's environment (this server's extension, routed per dialect).
 */
import type { Operation } from "./operation.js";

/** Routes served to both dialects (no dialect constraint): the same in both documents. */
export const SHARED: Record<string, Operation> = {
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

/** Repositories of a session's environment (this server's extension): the same in both dialects. */
export const REPOSITORIES: Record<string, Operation> = {
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
