/**
 * Which request started each turn of this process: its dialect (for metrics) and its span (traces link the turn to
 * it). Learnt when the turn's first event (queued or started) is published, which happens inside the request that
 * started it; forgotten when the turn ends.
 */
import type { SpanContext } from "@opentelemetry/api";
import { currentRequest, type Dialect } from "../../kernel/request-context.js";

/** `unknown`: the turn was not started by a request of this process (recovery, another instance's turn). */
export type TurnDialect = Dialect | "unknown";

export interface TurnOrigin {
  dialect: TurnDialect;
  span: SpanContext | null;
}

const UNKNOWN: TurnOrigin = { dialect: "unknown", span: null };

/** At most this many turns are remembered (ends that never come here, e.g. taken over by another instance). */
const MAX_TRACKED = 10_000;

export class TurnOrigins {
  private readonly origins = new Map<string, TurnOrigin>();

  /** The turn's first event was published: remember the request it runs in (once). */
  begin(turnId: string): TurnOrigin {
    const known = this.origins.get(turnId);
    if (known) return known;
    const request = currentRequest();
    const origin: TurnOrigin = request ? { dialect: request.dialect, span: request.span } : UNKNOWN;
    this.origins.set(turnId, origin);
    if (this.origins.size > MAX_TRACKED) {
      const oldest = this.origins.keys().next().value;
      if (oldest !== undefined) this.origins.delete(oldest);
    }
    return origin;
  }

  /** The turn ended: its origin, forgotten. */
  end(turnId: string): TurnOrigin {
    const origin = this.origins.get(turnId) ?? UNKNOWN;
    this.origins.delete(turnId);
    return origin;
  }

  get(turnId: string): TurnOrigin {
    return this.origins.get(turnId) ?? UNKNOWN;
  }
}
