// The one exec-server a running sandbox keeps spawned ahead of use (podman exec costs 100+ ms), handed to the next
// executor connection; a connection without a spare gets a new one. A spare of a warm sandbox is spawned without
// variables and waits for the session's (claim); it is never handed out before it has them.
import { ExecServerProcess } from "./exec-server.js";
import type { Podman } from "./podman.js";

export class SpareExecServer {
  private spare: ExecServerProcess | null = null;

  constructor(
    private readonly podman: Podman,
    /** Who the exec-server runs as (`uid:gid`) and its home. */
    private readonly launch: { user: string; home: string },
  ) {}

  /** A new spare in `container` in place of the old; `env` null leaves it waiting for `configure`. */
  spawn(container: string, env: Record<string, string> | null): void {
    this.kill();
    const p = new ExecServerProcess(this.podman, container, this.launch);
    p.once("exit", () => {
      if (this.spare === p) this.spare = null;
    });
    if (env !== null) p.configure(env);
    this.spare = p;
  }

  /** The session's variables for a spare that waits for them (it ignores them once it has some). */
  configure(env: Record<string, string>): void {
    if (this.spare && !this.spare.exited) this.spare.configure(env);
  }

  kill(): void {
    const p = this.spare;
    this.spare = null;
    p?.kill();
  }

  /** The spare, or a new exec-server when there is none (or it exited); either configured with `env`. */
  take(container: string, env: Record<string, string>): ExecServerProcess {
    const spare = this.spare;
    this.spare = null;
    if (spare && !spare.exited) {
      spare.configure(env);
      return spare;
    }
    const p = new ExecServerProcess(this.podman, container, this.launch);
    p.configure(env);
    return p;
  }
}
