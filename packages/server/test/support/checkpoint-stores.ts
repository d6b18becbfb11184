// Checkpoint stores without git, for unit tests of what the checkpoint feature decides: each workspace directory's
// store is a recording stand-in for the shadow repository (a record makes a checkpoint when the test says the tree
// changed; prune, repack, marks, restores and destroy are only recorded).
import { CheckpointStores, type Workspace } from "../../src/features/checkpoints/stores.js";
import type {
  CheckpointInfo,
  RecordOptions,
  RecordResult,
  RestoreOptions,
  RestoreResult,
} from "../../src/model/checkpoints.js";
import type { ShadowRepo } from "../../src/platform/git-store/shadow-repo.js";

type Describe = (first: boolean) => { label: string; meta: Record<string, string> };
type PruneOptions = Parameters<ShadowRepo["prune"]>[0];

export class RecordingRepo
  implements
    Pick<
      ShadowRepo,
      "record" | "latest" | "list" | "get" | "restore" | "prune" | "repack" | "destroy" | "dropMarks"
    >
{
  readonly records: Array<{ label: string; meta: Record<string, string>; opts: RecordOptions }> = [];
  readonly prunes: PruneOptions[] = [];
  readonly droppedMarks: string[] = [];
  readonly restores: Array<{ id: string; opts: RestoreOptions }> = [];
  readonly checkpoints: CheckpointInfo[] = [];
  repacks = 0;
  destroyed = false;
  head: CheckpointInfo | null = null;
  /** Whether the tree changed since the latest checkpoint (a record then makes one). */
  changed = true;
  /** Files the next checkpoint holds (the first checkpoint of an empty workspace has none). */
  files = 1;
  /** What the next prune drops. */
  toPrune = 0;
  private next = 0;

  async record(describe: Describe, opts: RecordOptions = {}): Promise<RecordResult> {
    const { label, meta } = describe(this.head === null);
    this.records.push({ label, meta, opts });
    const marked = opts.marks ? { marked: Promise.resolve() } : {};
    if (opts.unchanged || !this.changed) return { created: null, head: this.head, ...marked };
    const created = this.add(label, meta);
    return { created, head: created, ...marked };
  }

  /** A checkpoint of the current tree. */
  add(label: string, meta: Record<string, string>): CheckpointInfo {
    const created: CheckpointInfo = {
      id: String(++this.next).padStart(40, "0"),
      parent: this.head?.id ?? null,
      created_at: 1000 + this.next,
      label,
      meta,
      stats: { files: this.files, insertions: this.files, deletions: 0 },
      skipped: [],
      skipped_more: 0,
      workspace_git: null,
    };
    this.head = created;
    this.checkpoints.push(created);
    return created;
  }

  async latest(): Promise<CheckpointInfo | null> {
    return this.head;
  }

  async list(): Promise<CheckpointInfo[]> {
    return [...this.checkpoints];
  }

  async get(id: string): Promise<CheckpointInfo | undefined> {
    return this.checkpoints.find((c) => c.id === id);
  }

  /** Restores as the store would: a safety checkpoint of the tree first (when asked), then the restored tree. */
  async restore(id: string, opts: RestoreOptions = {}): Promise<RestoreResult> {
    this.restores.push({ id, opts });
    const changes = [{ path: "a.txt", action: "write" as const }];
    if (opts.dryRun) return { changes, safety: null, undo: null, restored: null };
    const safety =
      opts.forceSafety || this.changed ? this.add("before restore", opts.safetyMeta ?? {}) : null;
    const undo = (safety ?? this.head)?.id ?? null;
    await opts.written?.();
    const restored = this.add("restore", { ...opts.restoredMeta, restored_from: id });
    return { changes, safety, undo, restored };
  }

  async prune(opts: PruneOptions): Promise<number> {
    this.prunes.push(opts);
    return this.toPrune;
  }

  async repack(): Promise<boolean> {
    this.repacks++;
    return true;
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
  }

  async dropMarks(prefix: string): Promise<number> {
    this.droppedMarks.push(prefix);
    return 0;
  }
}

/** The server's checkpoint stores, each directory's store a {@link RecordingRepo}. */
export class RecordingStores extends CheckpointStores {
  readonly repos = new Map<string, RecordingRepo>();

  repo(key: string): RecordingRepo {
    let repo = this.repos.get(key);
    if (!repo) {
      repo = new RecordingRepo();
      this.repos.set(key, repo);
    }
    return repo;
  }

  override repoOf(ws: Workspace): Promise<ShadowRepo> {
    // The stand-in does what the checkpoint feature asks of a store (the methods RecordingRepo implements).
    ws.repo ??= Promise.resolve(this.repo(ws.key) as unknown as ShadowRepo);
    return ws.repo;
  }
}
