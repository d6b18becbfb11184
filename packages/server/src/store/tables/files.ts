/** Files of the Files API (their metadata: the contents are on disk or shared storage). */
import type { SqlDb } from "../sql/db.js";
import { limitOf, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { FileRecord, Queries } from "../types.js";

const FILES = table<FileRecord>("files", {
  id: "value",
  project_id: "value",
  created_at: "value",
  bytes: "value",
  filename: "value",
  purpose: "value",
  expires_at: "value",
  sha256: "value",
});

export type FileQueries = Pick<
  Queries,
  "insertFile" | "getFile" | "deleteFile" | "listFiles" | "listExpiredFiles"
>;

export function fileQueries(db: SqlDb): FileQueries {
  const files = rows(db, FILES);
  return {
    async insertFile(f) {
      await files.insert(f);
    },
    getFile: files.get,
    deleteFile: files.remove,
    listFiles(opts) {
      const conds = [sql`project_id = ${opts.project_id}`];
      if (opts.purpose !== undefined) conds.push(sql`purpose = ${opts.purpose}`);
      if (opts.unexpired_at !== undefined)
        conds.push(sql`(expires_at IS NULL OR expires_at > ${opts.unexpired_at})`);
      return files.list(opts, conds);
    },
    listExpiredFiles: (at, limit) =>
      files.select(
        [sql`expires_at IS NOT NULL`, sql`expires_at <= ${at}`],
        sql` ORDER BY expires_at ASC, rid ASC LIMIT ${limitOf(limit)}`,
      ),
  };
}
