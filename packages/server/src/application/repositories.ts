/**
 * The repository operations both dialects offer (dialect-neutral): the caller's scope decides which session it may
 * see (another project's is not found), then the domain's repository service does the work.
 */
import type { OutputRequest, RepositoryService } from "../domain/repositories/service.js";
import type { SessionService } from "../domain/sessions/service.js";
import type { RepositoryOutputItem } from "../model/records.js";
import type { RepositoryView } from "../model/repositories.js";
import type { Scope } from "../model/scope.js";

export class RepositoryOperations {
  constructor(
    private readonly deps: { sessions: Pick<SessionService, "get">; repositories: RepositoryService },
  ) {}

  async list(scope: Scope, sessionId: string): Promise<RepositoryView[]> {
    const { env } = await this.open(scope, sessionId);
    return this.deps.repositories.list(env);
  }

  async diff(scope: Scope, sessionId: string, index: number, format: "diff" | "patch"): Promise<string> {
    const { env } = await this.open(scope, sessionId);
    return this.deps.repositories.diff(env, index, format);
  }

  /** Commits (and pushes) the repository's changes now; null: nothing changed since the last output. */
  async output(
    scope: Scope,
    sessionId: string,
    index: number,
    req: OutputRequest,
  ): Promise<RepositoryOutputItem | null> {
    const { session, env } = await this.open(scope, sessionId);
    return this.deps.repositories.output(session, env, index, req, null);
  }

  private async open(scope: Scope, sessionId: string) {
    const session = await this.deps.sessions.get(scope, sessionId);
    return { session, env: await this.deps.repositories.environmentOf(session) };
  }
}
