import type { ItemRecord } from "../../../model/records.js";
import { itemObject } from "./items.js";

/**
 * Official items as JSON text, cached for finished items (a stored item that has completed, or was closed as
 * incomplete, never changes again): history pages are assembled from these strings, not rendered each time.
 */
export class RenderedItems {
  private readonly cache = new Map<string, string | null>();

  constructor(private readonly capacity = 20_000) {}

  /** The item's official JSON, or null when it has no official rendering (`agentId`: its session's agent). */
  of(item: ItemRecord, agentId: string): string | null {
    if (item.state === "started") return render(item, agentId);
    const key = `${item.session_id}\\u0000${item.ordinal}\\u0000${item.state}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const json = render(item, agentId);
    if (this.cache.size >= this.capacity) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, json);
    return json;
  }
}

function render(item: ItemRecord, agentId: string): string | null {
  const o = itemObject(item, agentId);
  return o ? JSON.stringify(o) : null;
}

/** Recent history pages by request, each valid for one log position of its session (bounded by total size). */
export class PageCache {
  private readonly pages = new Map<string, { seq: number; body: string }>();
  private bytes = 0;

  constructor(private readonly maxBytes = 8 * 1024 * 1024) {}

  get(key: string, seq: number): string | undefined {
    const hit = this.pages.get(key);
    return hit && hit.seq === seq ? hit.body : undefined;
  }

  set(key: string, seq: number, body: string): void {
    this.drop(key);
    if (body.length > this.maxBytes / 4) return;
    this.pages.set(key, { seq, body });
    this.bytes += body.length;
    while (this.bytes > this.maxBytes) this.drop(this.pages.keys().next().value!);
  }

  private drop(key: string): void {
    const old = this.pages.get(key);
    if (!old) return;
    this.pages.delete(key);
    this.bytes -= old.body.length;
  }
}
