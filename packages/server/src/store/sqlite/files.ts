import type { FilePurpose, FileRecord, Queries } from "../types.js";
import { listByCreated, type SqliteDb } from "./db.js";

interface FileRow {
  id: string;
  project_id: string;
  created_at: number;
  bytes: number;
  filename: string;
  purpose: string;
  expires_at: number | null;
  sha256: string;
}

const COLS = "id, project_id, created_at, bytes, filename, purpose, expires_at, sha256";

const fromRow = (r: FileRow): FileRecord => ({ ...r, purpose: r.purpose as FilePurpose });

export type FileQueries = Pick<
  Queries,
  "insertFile" | "getFile" | "deleteFile" | "listFiles" | "listExpiredFiles"
>;

/** Files of the Files API (their metadata: the contents are on disk). */
export function fileQueries(db: SqliteDb): FileQueries {
  return {
    async insertFile(f) {
      db.run(
        `INSERT INTO files (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        f.id,
        f.project_id,
        f.created_at,
        f.bytes,
        f.filename,
        f.purpose,
        f.expires_at,
        f.sha256,
      );
    },
    async getFile(id) {
      const row = db.get<FileRow>(`SELECT ${COLS} FROM files WHERE id = ?`, id);
      return row && fromRow(row);
    },
    async deleteFile(id) {
      return db.run("DELETE FROM files WHERE id = ?", id).changes > 0;
    },
    async listFiles(opts) {
      const where = ["project_id = ?"];
      const params: unknown[] = [opts.project_id];
      if (opts.purpose !== undefined) {
        where.push("purpose = ?");
        params.push(opts.purpose);
      }
      if (opts.unexpired_at !== undefined) {
        where.push("(expires_at IS NULL OR expires_at > ?)");
        params.push(opts.unexpired_at);
      }
      return listByCreated(db, { table: "files", cols: COLS, where, params, opts, map: fromRow });
    },
    async listExpiredFiles(at, limit) {
      return db
        .all<FileRow>(
          `SELECT ${COLS} FROM files WHERE expires_at IS NOT NULL AND expires_at <= ? ` +
            "ORDER BY expires_at ASC, rid ASC LIMIT ?",
          at,
          Math.max(0, Math.trunc(limit)),
        )
        .map(fromRow);
    },
  };
}
