/**
 * The Files API's operations, per project: a received upload becomes a file (its contents moved into place, then its
 * record stored), files are read, listed, deleted, and expire. Another project's file, and an expired one, are not
 * found (404) and never listed; expired files are purged (records, then contents) by `purgeExpired`, which the
 * service runs periodically. Contents are never changed once written; what refers to a file (an environment's
 * files, a template resolved for a session) copies them when it is prepared, so deleting a file never breaks an
 * environment made with it.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../../kernel/clock.js";
import { notFound } from "../../kernel/errors.js";
import { expiryOf } from "../../model/file-params.js";
import type { Scope } from "../../model/scope.js";
import type { FilePurpose, FileRecord, ListOptions, Page, Store } from "../../store/types.js";
import type { FileStorage, Received } from "./storage.js";

export const newFileId = (): string => `file-${randomBytes(12).toString("hex")}`;

export interface NewFile {
  received: Received;
  filename: string;
  purpose: FilePurpose;
  /** `expires_after.seconds` (null: the purpose's default). */
  expiresAfterSeconds: number | null;
}

export interface FileDeps {
  store: Store;
  clock: Clock;
  storage: FileStorage;
  logger: Logger;
}

const PURGE_BATCH = 500;

export class FileService {
  constructor(private readonly deps: FileDeps) {}

  get storage(): FileStorage {
    return this.deps.storage;
  }

  /** Stores a received upload as a new file of the caller's project. */
  async create(scope: Scope, f: NewFile): Promise<FileRecord> {
    const { store, clock, storage } = this.deps;
    const now = clock.now();
    const record: FileRecord = {
      id: newFileId(),
      project_id: scope.projectId,
      created_at: now,
      bytes: f.received.bytes,
      filename: f.filename,
      purpose: f.purpose,
      expires_at: expiryOf(f.purpose, now, f.expiresAfterSeconds),
      sha256: f.received.sha256,
    };
    // Contents first: a record never points at contents that are not there.
    await storage.commit(f.received.tmp, scope.projectId, record.id);
    try {
      await store.insertFile(record);
    } catch (err) {
      await storage.remove(scope.projectId, record.id);
      throw err;
    }
    return record;
  }

  /** The file, if it belongs to the caller's project and has not expired. */
  async get(scope: Scope, id: string, param = "file_id"): Promise<FileRecord> {
    const f = await this.deps.store.getFile(id);
    if (!f || f.project_id !== scope.projectId || this.expired(f)) {
      throw notFound(`No such File object: ${id}`, param);
    }
    return f;
  }

  list(
    scope: Scope,
    opts: Pick<ListOptions, "after" | "limit" | "order"> & { purpose?: FilePurpose },
  ): Promise<Page<FileRecord>> {
    return this.deps.store.listFiles({
      ...opts,
      project_id: scope.projectId,
      unexpired_at: this.deps.clock.now(),
    });
  }

  /** Deletes the file (its record, then its contents: a copy being read meanwhile still completes). */
  async delete(scope: Scope, id: string): Promise<void> {
    const f = await this.get(scope, id);
    await this.deps.store.deleteFile(f.id);
    await this.deps.storage.remove(f.project_id, f.id);
  }

  /** Where the file's contents are on disk. */
  contentPath(f: FileRecord): string {
    return this.deps.storage.contentPath(f.project_id, f.id);
  }

  /** Deletes files that have expired, and temporary files a crash left; returns how many files went. */
  async purgeExpired(): Promise<number> {
    const { store, clock, storage, logger } = this.deps;
    let n = 0;
    for (;;) {
      const due = await store.listExpiredFiles(clock.now(), PURGE_BATCH);
      for (const f of due) {
        if (await store.deleteFile(f.id)) n++;
        await storage.remove(f.project_id, f.id);
      }
      if (due.length < PURGE_BATCH) break;
    }
    // (File times are the file system's: compared with the real time, not the service's clock.)
    const swept = await storage.sweepIncoming(Date.now());
    if (swept > 0) logger.info({ files: swept }, "removed the temporary files of interrupted uploads");
    return n;
  }

  private expired(f: FileRecord): boolean {
    return f.expires_at !== null && f.expires_at <= this.deps.clock.now();
  }
}
