/**
 * The event a new checkpoint makes in its session's log (`checkpoint.created`, rendered as
 * `agent.session.checkpoint.created`): inside a turn's span for one made during the turn, without a turn (but
 * naming it in the checkpoint) for one made after the turn's end or outside any turn. The first checkpoint of an
 * empty workspace makes none. A failure to log it is logged, never thrown: the checkpoint exists either way.
 */
import type { Logger } from "pino";
import type { CheckpointSettings } from "../../config/load.js";
import { summaryOf } from "../../model/checkpoint-names.js";
import type { CheckpointInfo } from "../../model/checkpoints.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { SessionRecord } from "../../store/types.js";
import type { StoreUsage } from "./usage.js";

export class CheckpointAnnouncer {
  constructor(
    private readonly deps: {
      settings: CheckpointSettings;
      hub: EventHub;
      logger: Logger;
      /** Told that a store changed. */
      usage: StoreUsage;
    },
  ) {}

  /** Logs checkpoint `c` of session `s`, within turn `turnId` (null: outside any turn's span). */
  async announce(s: SessionRecord, c: CheckpointInfo, turnId: string | null): Promise<void> {
    this.deps.usage.changed();
    // The first checkpoint of an empty workspace tells nothing.
    if (c.parent === null && c.stats.files === 0) return;
    try {
      const official = this.deps.settings.officialEvents;
      await this.deps.hub.append(
        s.id,
        { type: "checkpoint.created", data: { checkpoint: summaryOf(c), official } },
        { turn_id: turnId },
      );
    } catch (err) {
      this.deps.logger.warn({ session: s.id, err: String(err) }, "could not log a checkpoint event");
    }
  }
}
