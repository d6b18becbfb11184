/** Bytes a directory tree occupies on disk (blocks, not file sizes): a checkpoint store's, a mirror's. */
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/** Bytes a directory tree occupies on disk (blocks). */
export async function diskUsageOf(path: string): Promise<number> {
  return du(path);
}

async function du(path: string): Promise<number> {
  const st = await lstat(path).catch(() => null);
  if (!st) return 0;
  let total = st.blocks !== undefined ? st.blocks * 512 : st.size;
  if (st.isDirectory()) {
    const names = await readdir(path).catch(() => [] as string[]);
    for (const name of names) total += await du(join(path, name));
  }
  return total;
}
