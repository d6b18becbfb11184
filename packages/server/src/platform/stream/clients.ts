/**
 * The streams open to clients (SSE responses following a session's log), by the API key that opened them: so that
 * revoking a key ends its open streams, and so that what each stream holds in memory can be read (tests, metrics).
 */

/** Why the server ends a stream that the client did not close. */
import type { EndReason } from "../../model/streams.js";

export interface StreamStats {
  sessionId: string;
  keyId: string | null;
  /** The hub subscription's mode ("lagging": the client's socket was full; it is caught up from the store). */
  mode: string;
  /** Log events held for this stream by its hub subscription. */
  bufferedEvents: number;
  /** Bytes written but not yet taken by the client's socket, plus text rendered but not yet written. */
  pendingBytes: number;
  /** Seq of the last event handed to the stream. */
  lastSeq: number;
}

export interface OpenStream {
  readonly sessionId: string;
  readonly keyId: string | null;
  /** Ends the stream (it writes its dialect's final frame for the reason, if it can, and closes). */
  end(reason: EndReason): void;
  stats(): StreamStats;
}

export class StreamClients {
  private readonly byKey = new Map<string | null, Set<OpenStream>>();
  private readonly listeners: Array<() => void> = [];

  /** Registers an open stream; the returned function unregisters it (call it once the stream has ended). */
  add(stream: OpenStream): () => void {
    let set = this.byKey.get(stream.keyId);
    if (!set) {
      set = new Set();
      this.byKey.set(stream.keyId, set);
    }
    set.add(stream);
    for (const l of this.listeners) l();
    return () => {
      const s = this.byKey.get(stream.keyId);
      if (!s?.delete(stream)) return;
      if (s.size === 0) this.byKey.delete(stream.keyId);
    };
  }

  /** Called whenever a stream is added (e.g. to start watching its key). */
  onAdd(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The API keys that have streams open (streams opened without a key are not listed). */
  keyIds(): string[] {
    return [...this.byKey.keys()].filter((k): k is string => k !== null);
  }

  /** Ends every stream opened with this key; returns how many. */
  endKey(keyId: string, reason: EndReason): number {
    const set = this.byKey.get(keyId);
    if (!set) return 0;
    this.byKey.delete(keyId);
    for (const s of set) s.end(reason);
    return set.size;
  }

  count(): number {
    let n = 0;
    for (const s of this.byKey.values()) n += s.size;
    return n;
  }

  list(): StreamStats[] {
    return [...this.byKey.values()].flatMap((set) => [...set].map((s) => s.stats()));
  }
}
