/**
 * Turns whose instance died: any live instance takes them over (the cluster gives each a new lease epoch, so a
 * zombie owner's late writes are refused) and ends them — failed with `owner_lost`, an active goal paused, the
 * streams of every instance ending with that — so the session's next turn, posted anywhere, continues the same
 * conversation. Re-running the turn is never tried: it would repeat its shell commands.
 */
import type { Logger } from "pino";
import type { Cluster } from "../../platform/cluster/types.js";
import type { GoalBook } from "../goals/book.js";
import type { TurnRunner } from "./runner.js";

export const OWNER_LOST_MESSAGE =
  "The instance running this turn stopped (it was killed or lost its database); the turn was ended by another " +
  "instance. Send the input again to continue the conversation.";

export class Takeover {
  private running = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: { cluster: Cluster; runner: TurnRunner; book: GoalBook; logger: Logger },
  ) {}

  /** Sweeps every `everyMs` (and once now). */
  start(everyMs = 1000): void {
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Takes over and ends what dead instances left running; returns how many turns. */
  async sweep(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    const { cluster, runner, book, logger } = this.deps;
    try {
      const orphans = await cluster.claimOrphans();
      for (const s of orphans) {
        const turn = await runner.endOrphan(s, "owner_lost", OWNER_LOST_MESSAGE);
        const goal = await book.get(s.id);
        if (goal?.status === "active") {
          await book.update(s.id, { status: "paused", status_reason: "owner_lost" }, turn?.id ?? null);
        }
        logger.warn({ session: s.id, turn: turn?.id }, "took over a dead instance's turn");
      }
      return orphans.length;
    } catch (err) {
      logger.error({ err: String(err) }, "takeover sweep failed");
      return 0;
    } finally {
      this.running = false;
    }
  }
}
