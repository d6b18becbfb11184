/**
 * What the service knows about the HTTP request an operation runs for, wherever that operation ends up (the turn it
 * starts, the events it writes): its dialect and its trace span. Set around every route handler by the request
 * telemetry hooks; read by observers that only see events (metrics and traces learn which dialect started a turn).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { SpanContext } from "@opentelemetry/api";

/**
 * Which wire format a request speaks: the official SDKs always send `OpenAI-Beta: agents=v1`. "template" is the
 * legacy dialect's wire name (metrics labels, `/openapi.json?dialect=template`).
 */
export type Dialect = "openai" | "template";

export interface RequestContext {
  dialect: Dialect;
  /** The request's span, when traces are exported. */
  span: SpanContext | null;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` (and everything it starts) as part of the request. */
export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The request the current code runs for, if any (none: recovery, timers, another instance's work). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}
