// The OOM kills and refused forks of one sandbox over its life, from successive readings of its container's cgroup
// counters. Each container (a resume or a replace makes a new cgroup) starts its counters at 0, so a reading below
// the previous one starts a new count rather than a negative one.
import type { CgroupCounters } from "./cgroup.js";

export class KillTally {
  /** OOM kills since this process made or adopted the sandbox. */
  oomKills = 0;
  /** Forks refused at the pids limit since this process made or adopted the sandbox. */
  pidsLimitHits = 0;
  private prevOom = 0;
  private prevPidsHits = 0;

  /** Adds a reading; returns what is new since the previous one. */
  add(c: CgroupCounters): { oom: number; hits: number } {
    if (c.oomKills < this.prevOom) this.prevOom = 0;
    if (c.pidsLimitHits < this.prevPidsHits) this.prevPidsHits = 0;
    const oom = c.oomKills - this.prevOom;
    const hits = c.pidsLimitHits - this.prevPidsHits;
    this.prevOom = c.oomKills;
    this.prevPidsHits = c.pidsLimitHits;
    if (oom > 0) this.oomKills += oom;
    if (hits > 0) this.pidsLimitHits += hits;
    return { oom, hits };
  }
}
