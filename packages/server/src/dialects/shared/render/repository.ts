/**
 * Repositories of a session's environment and what the service handed back of them, as both dialects show them
 * (this server's extension: `agent.session.repository`, `repository_output` items and
 * `agent.session.repository.output` events).
 */

import type { RepositoryOutputItem } from "../../../model/records.js";
import type { RepositoryView } from "../../../model/repositories.js";

export function repositoryObject(sessionId: string, r: RepositoryView) {
  return {
    object: "agent.session.repository",
    session_id: sessionId,
    index: r.index,
    url: r.url,
    ref: r.ref,
    path: r.path,
    base_commit: r.base_commit,
    branch: r.branch,
    output: r.output,
    outputs: r.outputs.map((o) => ({ commit: o.commit, branch: o.branch, push: o.push, created_at: o.at })),
  };
}

/** A `repositoryOutput` item's fields (without the item's own id, type and turn). */
export function repositoryOutputFields(i: RepositoryOutputItem) {
  return {
    repository: i.repository,
    url: i.url,
    path: i.path,
    branch: i.branch,
    commit: i.commit,
    parent_commit: i.parent,
    base_commit: i.base,
    message: i.message,
    stats: i.stats,
    push: i.push,
    error: i.error,
  };
}
