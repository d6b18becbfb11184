/**
 * Engine threads' rollout files shared through PostgreSQL, so that a session's conversation can continue on
 * whichever instance claims its next turn. The engine keeps a thread as one append-only JSONL file in its
 * CODEX_HOME (`sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`, read again by `thread/resume`): after each
 * turn the bytes it appended are stored as one chunk, in the statement of the turn's end (`endTurn`: the session
 * is never idle without them); before a turn, an instance whose copy is shorter than the stored one rewrites its
 * file from the chunks (a "move"). An engine that still has the thread loaded keeps its older copy in memory and
 * would write over the newer turns, so a move also reports the local copy stale.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { RolloutChunk } from "../../store/types.js";
import type { Rollouts } from "./types.js";

/**
 * A turn's new bytes up to this size are read at once (from the page cache: microseconds, where three trips through
 * libuv's thread pool cost a good part of a millisecond at the end of every turn); larger ones without blocking.
 */
const SYNC_READ_BYTES = 1 << 20;

function readNow(path: string, into: Buffer, from: number): number {
  const fd = openSync(path, "r");
  try {
    return readSync(fd, into, 0, into.length, from);
  } finally {
    closeSync(fd);
  }
}

async function readLater(path: string, into: Buffer, from: number): Promise<number> {
  const file = await open(path, "r");
  try {
    return (await file.read(into, 0, into.length, from)).bytesRead;
  } finally {
    await file.close();
  }
}

export class PgRollouts implements Rollouts {
  /** Local rollout file of each thread seen here. */
  private readonly paths = new Map<string, string>();
  /** Bytes of each thread's rollout the database holds (as far as this instance knows). */
  private readonly sizes = new Map<string, number>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly codexHome: string,
  ) {}

  async prepare(threadId: string): Promise<{ moved: boolean; stale: boolean }> {
    const shared = await this.storedSize(threadId);
    const path = this.find(threadId);
    const local = path ? statSync(path).size : 0;
    if (shared === local) return { moved: false, stale: false };
    if (local > shared) {
      // This instance ran the last turn but its upload did not happen (e.g. it failed): store it now.
      await this.save(threadId);
      return { moved: false, stale: false };
    }
    const data = await this.download(threadId);
    const target = path ?? this.newPath(threadId);
    const tmp = `${target}.tmp-${process.pid}`;
    writeFileSync(tmp, data);
    renameSync(tmp, target);
    this.paths.set(threadId, target);
    this.sizes.set(threadId, data.length);
    return { moved: true, stale: path !== undefined };
  }

  async save(threadId: string): Promise<void> {
    const chunk = await this.unsaved(threadId);
    if (!chunk) return;
    await this.pool.query(
      "INSERT INTO rollout_chunks (thread_id, start_offset, data) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
      [chunk.thread_id, chunk.start_offset, chunk.data],
    );
    this.stored(chunk);
  }

  async unsaved(threadId: string): Promise<RolloutChunk | null> {
    const path = this.find(threadId);
    if (!path) return null;
    const size = statSync(path).size;
    const from = this.sizes.get(threadId) ?? (await this.storedSize(threadId));
    if (size <= from) {
      this.sizes.set(threadId, from);
      return null;
    }
    const data = Buffer.alloc(size - from);
    const bytesRead =
      data.length <= SYNC_READ_BYTES ? readNow(path, data, from) : await readLater(path, data, from);
    return { thread_id: threadId, start_offset: from, data: data.subarray(0, bytesRead) };
  }

  stored(chunk: RolloutChunk): void {
    this.sizes.set(chunk.thread_id, chunk.start_offset + chunk.data.length);
  }

  private async storedSize(threadId: string): Promise<number> {
    const res = await this.pool.query<{ size: number }>(
      "SELECT coalesce(max(start_offset + octet_length(data)), 0)::bigint AS size FROM rollout_chunks WHERE thread_id = $1",
      [threadId],
    );
    return Number(res.rows[0]?.size ?? 0);
  }

  private async download(threadId: string): Promise<Buffer> {
    const res = await this.pool.query<{ start_offset: number; data: Buffer }>(
      "SELECT start_offset, data FROM rollout_chunks WHERE thread_id = $1 ORDER BY start_offset",
      [threadId],
    );
    let at = 0;
    for (const row of res.rows) {
      if (Number(row.start_offset) !== at) {
        throw new Error(
          `rollout of thread ${threadId} has a gap at byte ${at} (next chunk at ${row.start_offset})`,
        );
      }
      at += row.data.length;
    }
    return Buffer.concat(res.rows.map((r) => r.data));
  }

  /** The thread's rollout file in this CODEX_HOME, if there is one. */
  private find(threadId: string): string | undefined {
    const cached = this.paths.get(threadId);
    if (cached && existsSync(cached)) return cached;
    const suffix = `-${threadId}.jsonl`;
    const walk = (dir: string): string | undefined => {
      if (!existsSync(dir)) return undefined;
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, entry.name);
        if (entry.isDirectory()) {
          const found = walk(p);
          if (found) return found;
        } else if (entry.name.startsWith("rollout-") && entry.name.endsWith(suffix)) return p;
      }
      return undefined;
    };
    const found = walk(join(this.codexHome, "sessions"));
    if (found) this.paths.set(threadId, found);
    return found;
  }

  /** Where a moved thread's file goes: the engine's own layout (a dated folder, the id in the name). */
  private newPath(threadId: string): string {
    const now = new Date();
    const pad = (n: number) => String(n).padStart(2, "0");
    const day = [String(now.getUTCFullYear()), pad(now.getUTCMonth() + 1), pad(now.getUTCDate())];
    const dir = join(this.codexHome, "sessions", ...day);
    mkdirSync(dir, { recursive: true });
    const time = `${day.join("-")}T${pad(now.getUTCHours())}-${pad(now.getUTCMinutes())}-${pad(now.getUTCSeconds())}`;
    return join(dir, `rollout-${time}-${threadId}.jsonl`);
  }
}
