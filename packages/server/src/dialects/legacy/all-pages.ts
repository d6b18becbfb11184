import type { ListOptions, Page } from "../../model/pages.js";

/**
 * Every record of a cursor-paged store list, oldest first (the template dialect has no pagination). The `after`
 * cursor always moves forward, so this ends.
 */
export async function allPages<T extends { id: string }>(
  list: (opts: ListOptions) => Promise<Page<T>>,
): Promise<T[]> {
  const all: T[] = [];
  for (let after: string | undefined; ; ) {
    const page = await list({ order: "asc", limit: 1000, ...(after ? { after } : {}) });
    all.push(...page.data);
    const last = page.data.at(-1);
    if (!page.has_more || !last) return all;
    after = last.id;
  }
}
