/** A session's turn traces (`traces.list`): read from its log, with the resource of this service's traces. */
import type { Resource } from "@opentelemetry/resources";
import { listTraces } from "../features/observability/turn-traces.js";
import type { SessionRecord } from "../model/records.js";
import type { Store } from "../store/types.js";

export type TraceListQuery = Parameters<typeof listTraces>[3];

export class TraceOperations {
  constructor(private readonly deps: { store: Store; resource: Resource }) {}

  list(s: SessionRecord, q: TraceListQuery) {
    return listTraces(this.deps.store, this.deps.resource, s.id, q);
  }
}
