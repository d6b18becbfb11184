// Checkpoint stores without git, for unit tests of what the checkpoint feature decides: each workspace directory's
// store is a recording stand-in for the shadow repository (a record makes a checkpoint when the test says the tree
// changed; prune, repack, marks and destroy are only recorded).
import { CheckpointStores, type Workspace } from "../../src/features/checkpoints/stores.js";
import type { CheckpointInfo, RecordOptions, RecordResult } from "../../src/model/checkpoints.js";
import type { ShadowRepo } from "../../src/platform/git-store/shadow-repo.js";

type Describe = (first: boolean) => { label: string; meta: Record<string, string> };
type PruneOptions = Parameters<ShadowRepo["prune"]>[0];

export class RecordingRepo
  implements Pick<ShadowRepo, "record" | "latest" | "prune" | "repack" | "destroy" | "dropMarks">
{
  readonly records: Array<{ label: string; meta: Record<string, string>; opts: RecordOptions }> = [];
  readonly prunes: PruneOptions[] = [];
  readonly droppedMarks: string[] = [];
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
    return { created, head: created, ...marked };
  }

  async latest(): Promise<CheckpointInfo | null> {
    return this.head;
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
