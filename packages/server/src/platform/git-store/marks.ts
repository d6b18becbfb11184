/**
 * Marks: named references kept in a store (`refs/marks/<name>`, e.g. a turn's "before" and "after") pointing at
 * checkpoints. They are written as loose refs by hand (the caller holds the store's lock: no git runs against it
 * meanwhile) and keep nothing alive: pruning a checkpoint drops the marks pointing at it.
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ID } from "./commits.js";
import type { Git } from "./git.js";

const MARK_PREFIX = "refs/marks/";
/** A mark name: slash-separated components of letters, digits, "_" and "-". */
const MARK_NAME = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/;

export function checkMarkName(name: string): void {
  if (!MARK_NAME.test(name) || name.endsWith(".lock")) throw new Error(`invalid mark name: ${name}`);
}

/** Writes marks as loose references in the store at `gitDir`: `null` stands for `latest`. */
export async function writeMarks(
  gitDir: string,
  marks: Record<string, string | null>,
  latest: string,
): Promise<void> {
  await Promise.all(
    Object.entries(marks).map(async ([name, id]) => {
      checkMarkName(name);
      const target = id ?? latest;
      if (!ID.test(target)) throw new Error(`not a checkpoint id: ${target}`);
      const path = join(gitDir, ...`${MARK_PREFIX}${name}`.split("/"));
      await mkdir(dirname(path), { recursive: true });
      const tmp = `${path}.${process.pid}.tmp`;
      await writeFile(tmp, `${target}\n`);
      await rename(tmp, path);
    }),
  );
}

/** The checkpoint id a mark names (null: no such mark). */
export async function readMark(git: Git, name: string): Promise<string | null> {
  checkMarkName(name);
  const found = await git.run(["rev-parse", "--verify", "--quiet", `${MARK_PREFIX}${name}^{commit}`], {
    okCodes: [1, 128],
  });
  const id = found.exitCode === 0 ? found.stdout.toString("utf8").trim() : "";
  return ID.test(id) ? id : null;
}

/** Deletes every mark under `prefix`. Returns how many. */
export async function dropMarks(git: Git, prefix: string): Promise<number> {
  checkMarkName(prefix);
  const refs = await git.lines(["for-each-ref", "--format=%(refname)%00", `${MARK_PREFIX}${prefix}/`]);
  const names = refs.map((r) => r.replace(/^\n/, "")).filter((r) => r.startsWith(MARK_PREFIX));
  if (names.length === 0) return 0;
  await git.run(["update-ref", "--stdin"], { input: names.map((r) => `delete ${r}\n`).join("") });
  return names.length;
}

/** The refs of the marks pointing at any of `ids` (a prune deletes them with the checkpoints). */
export async function marksPointingAt(git: Git, ids: ReadonlySet<string>): Promise<string[]> {
  const marks = await git.lines(["for-each-ref", "--format=%(refname)%00%(objectname)%00", MARK_PREFIX]);
  const refs: string[] = [];
  for (let i = 0; i + 1 < marks.length; i += 2) {
    const ref = (marks[i] as string).replace(/^\n/, "");
    if (ids.has(marks[i + 1] as string)) refs.push(ref);
  }
  return refs;
}
