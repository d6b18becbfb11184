import type { SqliteDb } from "./db.js";

/**
 * The last event seq and item ordinal per session, cached (loaded lazily from max()). This process is the only
 * writer of the database file; the cache is dropped for a session on delete and entirely when a transaction rolls
 * back, so it never runs ahead of the data.
 */
export class Counters {
  private readonly seqs = new Map<string, number>();
  private readonly ordinals = new Map<string, number>();

  constructor(private readonly db: SqliteDb) {}

  lastSeq(sessionId: string): number {
    let last = this.seqs.get(sessionId);
    if (last === undefined) {
      last = this.db.value<number>("SELECT max(seq) FROM events WHERE session_id = ?", sessionId) ?? 0;
      this.seqs.set(sessionId, last);
    }
    return last;
  }

  setSeq(sessionId: string, seq: number): void {
    this.seqs.set(sessionId, seq);
  }

  lastOrdinal(sessionId: string): number {
    let last = this.ordinals.get(sessionId);
    if (last === undefined) {
      last = this.db.value<number>("SELECT max(ordinal) FROM items WHERE session_id = ?", sessionId) ?? -1;
      this.ordinals.set(sessionId, last);
    }
    return last;
  }

  setOrdinal(sessionId: string, ordinal: number): void {
    this.ordinals.set(sessionId, ordinal);
  }

  forget(sessionId: string): void {
    this.seqs.delete(sessionId);
    this.ordinals.delete(sessionId);
  }

  clear(): void {
    this.seqs.clear();
    this.ordinals.clear();
  }
}
