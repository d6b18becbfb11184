import type { FileRecord, Queries } from "../types.js";
import { listByCreated, type PgDb } from "./db.js";

/** A row is a FileRecord (`bytes` is bigint: parsed as a number, see db.ts). */
const COLS = "id, project_id, created_at, bytes, filename, purpose, expires_at, sha256";

export type FileQueries = Pick<
  Queries,
  "insertFile" | "getFile" | "deleteFile" | "listFiles" | "listExpiredFiles"
>;

/** Files of the Files API (their metadata: the contents are on shared storage). */
export function fileQueries(db: PgDb): FileQueries {
  return {
    async insertFile(f) {
      await db.run(`INSERT INTO files (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        f.id,
        f.project_id,
        f.created_at,
        f.bytes,
        f.filename,
        f.purpose,
        f.expires_at,
        f.sha256,
      ]);
    },
    async getFile(id) {
      return db.row<FileRecord>(`SELECT ${COLS} FROM files WHERE id = $1`, [id]);
    },
    async deleteFile(id) {
      return (await db.run("DELETE FROM files WHERE id = $1", [id])) > 0;
    },
    async listFiles(opts) {
      const where = ["project_id = $1"];
      const params: unknown[] = [opts.project_id];
      if (opts.purpose !== undefined) {
        params.push(opts.purpose);
        where.push(`purpose = $${params.length}`);
      }
      if (opts.unexpired_at !== undefined) {
        params.push(opts.unexpired_at);
        where.push(`(expires_at IS NULL OR expires_at > $${params.length})`);
      }
      return listByCreated<FileRecord, FileRecord>(db, {
        table: "files",
        cols: COLS,
        where,
        params,
        opts,
        map: (r) => r,
      });
    },
    async listExpiredFiles(at, limit) {
      return db.rows<FileRecord>(
        `SELECT ${COLS} FROM files WHERE expires_at IS NOT NULL AND expires_at <= $1 ` +
          "ORDER BY expires_at ASC, rid ASC LIMIT $2",
        [at, Math.max(0, Math.trunc(limit))],
      );
    },
  };
}
