/**
 * Secret values a session's agent was given (its environment's variables, environment-variable credentials, MCP
 * tokens) are replaced by `[redacted]` in everything the session's log stores: events, the items written with them,
 * and so every stream and response built from them. Streamed deltas are handled across their boundaries: text that
 * could be the start of a secret is held back until the next delta of the same item shows whether it is one (a
 * held-back tail is dropped when the item ends; the item's final text is complete and redacted).
 *
 * Values shorter than {@link MIN_SECRET_LENGTH} characters are not redacted (they would take ordinary words out of
 * the output). What the agent does with a secret inside the sandbox (writes it to a file, sends it over a network it
 * was given) is beyond this: see SECURITY.md.
 */
import type { NewEvent, Queries, Store } from "../../store/types.js";

export const MIN_SECRET_LENGTH = 8;
export const REDACTED = "[redacted]";
/** Values kept per session (the newest): enough for every variable and credential a session may have. */
const MAX_VALUES = 256;
/** Delta streams followed per session (held-back tails). */
const MAX_STREAMS = 1024;

interface SessionSecrets {
  /** Longest first (a value containing another is replaced whole). */
  values: string[];
  /** Held-back text per streamed item (`item_id` + kind). */
  held: Map<string, string>;
}

export class SecretRedactor {
  private readonly sessions = new Map<string, SessionSecrets>();

  /** The session's agent has been given these values (they are redacted from now on, with those before). */
  remember(sessionId: string, values: Iterable<string>): void {
    const fresh = [...values].filter((v) => v.length >= MIN_SECRET_LENGTH);
    if (fresh.length === 0) return;
    const s = this.sessions.get(sessionId) ?? { values: [], held: new Map() };
    const all = [...new Set([...fresh, ...s.values])].slice(0, MAX_VALUES);
    s.values = all.sort((a, b) => b.length - a.length);
    this.sessions.set(sessionId, s);
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Whether the session has values to redact. */
  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** The text with the session's secret values replaced. */
  redactText(sessionId: string, text: string): string {
    const s = this.sessions.get(sessionId);
    return s ? replaceAll(text, s.values) : text;
  }

  /** A store whose event appends (in and out of transactions) store the events redacted. */
  wrap(store: Store): Store {
    const append =
      (target: Queries): Queries["appendEvents"] =>
      (sessionId, events, fence) =>
        target.appendEvents(sessionId, this.redactEvents(sessionId, events), fence);
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        if (prop === "appendEvents") return append(target);
        if (prop === "transaction") {
          return <T>(fn: (tx: Queries) => Promise<T>) =>
            target.transaction((tx) =>
              fn(
                new Proxy(tx, {
                  get: (t, p, r) => (p === "appendEvents" ? append(t) : Reflect.get(t, p, r)),
                }),
              ),
            );
        }
        return Reflect.get(target, prop, receiver);
      },
    });
  }

  private redactEvents(sessionId: string, events: NewEvent[]): NewEvent[] {
    const s = this.sessions.get(sessionId);
    if (!s) return events;
    return events.map((e) => {
      const event = e.event;
      if (event.type === "item.delta") {
        const key = `${event.data.item_id}\u0000${event.data.kind}`;
        const text = (s.held.get(key) ?? "") + event.data.delta;
        const { emit, hold } = splitHeld(replaceAll(text, s.values), s.values);
        if (hold) {
          if (s.held.size >= MAX_STREAMS) s.held.delete(s.held.keys().next().value!);
          s.held.set(key, hold);
        } else s.held.delete(key);
        return { ...e, event: { ...event, data: { ...event.data, delta: emit } } };
      }
      if (event.type === "item.completed") {
        const id = (event.data.item as { id?: unknown }).id;
        for (const k of [...s.held.keys()]) if (k.startsWith(`${String(id)}\u0000`)) s.held.delete(k);
      }
      return deepRedact(e, s.values);
    });
  }
}

function replaceAll(text: string, values: readonly string[]): string {
  let out = text;
  for (const v of values) if (out.includes(v)) out = out.split(v).join(REDACTED);
  return out;
}

/** The text to send now, and a tail held back because it may be the beginning of a secret. */
function splitHeld(text: string, values: readonly string[]): { emit: string; hold: string } {
  let keep = 0;
  for (const v of values) {
    const max = Math.min(v.length - 1, text.length);
    for (let k = max; k > keep; k--) {
      if (text.endsWith(v.slice(0, k))) {
        keep = k;
        break;
      }
    }
  }
  return { emit: text.slice(0, text.length - keep), hold: text.slice(text.length - keep) };
}

function deepRedact<T>(value: T, values: readonly string[]): T {
  if (typeof value === "string") return replaceAll(value, values) as T;
  if (Array.isArray(value)) return value.map((v) => deepRedact(v, values)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = deepRedact(v, values);
    return out as T;
  }
  return value;
}

/** `text` with these values (those long enough) replaced: for text that is not an event (a log, an error). */
export function redactValues(text: string, values: Iterable<string>): string {
  const list = [...values].filter((v) => v.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  return replaceAll(text, list);
}
