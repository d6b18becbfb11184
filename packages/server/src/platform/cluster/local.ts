/**
 * One instance alone with its embedded database: nobody else to tell or to take over from; rollouts stay on this
 * machine. Start-up recovery (TurnRunner.recover) deals with what the previous process left running.
 */
import { randomBytes } from "node:crypto";
import type { SessionRecord } from "../../store/types.js";
import type { Cluster, ClusterStats, ControlResult, Rollouts } from "./types.js";

export class LocalCluster implements Cluster {
  readonly instanceId = `inst_${randomBytes(8).toString("hex")}`;
  readonly healthy = true;

  async start(): Promise<void> {}

  published(): void {}

  async send(): Promise<ControlResult | null> {
    return null;
  }

  async claimOrphans(): Promise<SessionRecord[]> {
    return [];
  }

  stats(): ClusterStats {
    return { kind: "single", instance: this.instanceId, healthy: true };
  }

  async stop(): Promise<void> {}
}

export const localRollouts: Rollouts = {
  async prepare() {
    return { moved: false, stale: false };
  },
  async save() {},
  async unsaved() {
    return null;
  },
  stored() {},
};
