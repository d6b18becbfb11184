/**
 * Ready-made workspace clones: after a session's repository is checked out, another clone of the same mirror,
 * commit, branch and URL is made in the background (`<repository dir>/spares/<key>/`: the files with their `.git`,
 * and the private record), so that the next session asking for the same gets it by two renames instead of writing
 * every file again (on a slow disk a 50 000-file checkout takes seconds). A spare is taken whole or not at all (an
 * atomic rename claims it); it must be on the workspace's file system (a rename cannot cross one: then spares are
 * turned off); at most `max` exist, the oldest dropped first; what a stopped service left half made is removed.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, rename, rm, rmdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";

export class Spares {
  private readonly making = new Set<string>();
  private swept: Promise<void> | null = null;
  private off = false;

  constructor(
    private readonly dir: string,
    private readonly max: number,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  get enabled(): boolean {
    return this.max > 0 && !this.off;
  }

  /**
   * Moves the spare for `key` into place: its files to `target` (absent, or an empty directory), its record to
   * `record` (absent). False: there was none (or it could not be used; it is gone then).
   */
  async take(key: string, target: string, record: string): Promise<boolean> {
    if (!this.enabled) return false;
    await this.sweep();
    const ready = join(this.dir, key);
    const claimed = `${ready}.taking-${randomBytes(4).toString("hex")}`;
    try {
      await rename(ready, claimed);
    } catch {
      return false; // none ready (or another session took it)
    }
    try {
      // An existing target (the workspace itself) must be empty; the spare takes its place with its mode.
      const before = await stat(target).catch(() => null);
      if (before) await rmdir(target);
      await mkdir(dirname(target), { recursive: true });
      await mkdir(dirname(record), { recursive: true });
      await rename(join(claimed, "record.git"), record);
      await rename(join(claimed, "tree"), target);
      if (before) await chmod(target, before.mode & 0o7777);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EXDEV") this.off = true;
      await rm(record, { recursive: true, force: true });
      return false;
    } finally {
      await rm(claimed, { recursive: true, force: true });
    }
  }

  /** Makes a spare for `key` in the background unless one exists or is being made (`make` writes tree and record). */
  replenish(key: string, make: (tree: string, record: string) => Promise<void>): void {
    if (!this.enabled || this.making.has(key)) return;
    this.making.add(key);
    void (async () => {
      const ready = join(this.dir, key);
      if (await stat(ready).catch(() => null)) return;
      await this.sweep();
      await this.makeRoom();
      const tmp = `${ready}.tmp-${randomBytes(4).toString("hex")}`;
      try {
        await mkdir(tmp, { recursive: true, mode: 0o700 });
        await make(join(tmp, "tree"), join(tmp, "record.git"));
        await rename(tmp, ready);
      } catch (err) {
        await rm(tmp, { recursive: true, force: true });
        this.onError(err);
      }
    })().finally(() => this.making.delete(key));
  }

  /** Drops the oldest spares beyond `max - 1` (one is about to be made). */
  private async makeRoom(): Promise<void> {
    const names = (await readdir(this.dir).catch(() => [] as string[])).filter((n) => !n.includes("."));
    if (names.length < this.max) return;
    const aged = await Promise.all(
      names.map(async (n) => ({ n, t: (await stat(join(this.dir, n)).catch(() => null))?.mtimeMs ?? 0 })),
    );
    for (const { n } of aged.sort((a, b) => a.t - b.t).slice(0, names.length - this.max + 1)) {
      await rm(join(this.dir, n), { recursive: true, force: true });
    }
  }

  /** Once: what a stopped service left half made or half taken. */
  private sweep(): Promise<void> {
    this.swept ??= (async () => {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      for (const n of await readdir(this.dir)) {
        if (n.includes(".tmp-") || n.includes(".taking-")) {
          await rm(join(this.dir, n), { recursive: true, force: true });
        }
      }
    })();
    return this.swept;
  }
}
