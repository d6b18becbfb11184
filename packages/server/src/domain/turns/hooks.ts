/**
 * What features attached to the turns (domain/feature.ts): their lifecycle hooks, run in registration order, and the
 * tools this server answers itself instead of asking the client.
 */
import type { Logger } from "pino";
import type { SessionRecord, TurnRecord } from "../../store/types.js";
import type { ServerTool, ServerToolAnswer, ServerToolCall, TurnActivity, TurnHooks } from "../feature.js";

export class TurnFeatures {
  private readonly hooks: TurnHooks[] = [];
  private readonly serverTools = new Map<string, ServerTool>();

  constructor(private readonly logger: Logger) {}

  use(hooks: TurnHooks): void {
    this.hooks.push(hooks);
  }

  serveTool(tool: ServerTool): void {
    this.serverTools.set(tool.name, tool);
  }

  /** The session's tool of that name this server answers, bound to the session (undefined: not one). */
  serverToolOf(
    session: SessionRecord,
    name: string,
  ): ((call: ServerToolCall) => Promise<ServerToolAnswer>) | undefined {
    const tool = this.serverTools.get(name);
    if (!tool?.enabledFor(session)) return undefined;
    return (call) => tool.call(session, call);
  }

  /** Runs every feature's `beforeTurn`, in order; a rejection is the caller's (it fails the turn). */
  async beforeTurn(session: SessionRecord, turn: TurnRecord): Promise<void> {
    for (const h of this.hooks) await h.beforeTurn?.(session, turn);
  }

  /** Runs every feature's `afterEngineTurn`, in order; failures are logged. */
  afterEngineTurn(session: SessionRecord, turn: TurnRecord, activity: TurnActivity): Promise<void> {
    return this.each("afterEngineTurn", session, turn, (h) => h.afterEngineTurn?.(session, turn, activity));
  }

  /** Runs every feature's `afterTurn`, in order; failures are logged. */
  afterTurn(session: SessionRecord, turn: TurnRecord): Promise<void> {
    return this.each("afterTurn", session, turn, (h) => h.afterTurn?.(session, turn));
  }

  private async each(
    name: string,
    session: SessionRecord,
    turn: TurnRecord,
    call: (h: TurnHooks) => Promise<void> | undefined,
  ): Promise<void> {
    for (const h of this.hooks) {
      try {
        await call(h);
      } catch (err) {
        this.logger.error(
          { session: session.id, turn: turn.id, hook: name, err: String(err) },
          "turn hook failed",
        );
      }
    }
  }
}
