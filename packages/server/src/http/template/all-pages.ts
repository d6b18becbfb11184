import type { ListOptions, Page } from "../../store/types.js";

/**
 * Every record of a cursor-paged store list, oldest first (the template dialect has no pagination). The `after`
 * cursor always moves forward, so this ends.
 */
export function allPages<T extends { id: string }>(list: (opts: ListOptions) => Page<T>): T[] {
  const all: T[] = [];
  for (let after: string | undefined; ; ) {
    const page = list({ order: "asc", limit: 1000, ...(after ? { after } : {}) });
    all.push(...page.data);
    const last = page.data.at(-1);
    if (!page.has_more || !last) return all;
    after = last.id;
  }
}
