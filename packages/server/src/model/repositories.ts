/** A repository of a session's environment as the API shows it (domain/repositories keeps it). */
export interface RepositoryView {
  index: number;
  url: string;
  ref: string | null;
  /** Official path of its root. */
  path: string;
  base_commit: string;
  /** The branch checked out in the workspace (null: a tag or commit, detached). */
  branch: string | null;
  output: { type: "branch"; branch: string | null; push: boolean } | null;
  outputs: Array<{ commit: string; branch: string; push: "pushed" | "failed" | "not_requested"; at: number }>;
}
