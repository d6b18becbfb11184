/**
 * Spans built by this service (trace-model.ts) as the OpenTelemetry SDK's finished spans, and as OTLP JSON. Both go
 * through the SDK's own types and serializer, so what `traces.list` returns is exactly what an OTLP/HTTP JSON
 * exporter would send.
 */
import { createRequire } from "node:module";
import { type HrTime, type Link, SpanKind, type SpanStatus, TraceFlags } from "@opentelemetry/api";
import type { InstrumentationScope } from "@opentelemetry/core";
import type * as OtlpTransformer from "@opentelemetry/otlp-transformer";
import { type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace";
import type { SpanData } from "./trace-model.js";

const require = createRequire(import.meta.url);

export const DEFAULT_SERVICE_NAME = "codex-agent-api";

/** The instrumentation scope of turn and item spans. */
export const TURN_SCOPE: InstrumentationScope = { name: "codex-agent-api/turns" };

/** The resource every span of this service carries. */
export function serviceResource(env: Record<string, string | undefined>, instanceId?: string): Resource {
  return resourceFromAttributes({
    "service.name": env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
    ...(instanceId ? { "service.instance.id": instanceId } : {}),
  });
}

/** Unix seconds (millisecond or better precision) as [seconds, nanoseconds]. */
export function hrTime(unixSeconds: number): HrTime {
  const micros = Math.round(unixSeconds * 1e6);
  const seconds = Math.floor(micros / 1e6);
  return [seconds, (micros - seconds * 1e6) * 1000];
}

function hrDuration(start: HrTime, end: HrTime): HrTime {
  let seconds = end[0] - start[0];
  let nanos = end[1] - start[1];
  if (nanos < 0) {
    seconds -= 1;
    nanos += 1e9;
  }
  return [seconds, nanos];
}

const sampled = (traceId: string, spanId: string) => ({ traceId, spanId, traceFlags: TraceFlags.SAMPLED });

/** A span of ours as the SDK's finished span (what processors and exporters take). */
export function toReadableSpan(span: SpanData, resource: Resource, scope = TURN_SCOPE): ReadableSpan {
  const startTime = hrTime(span.start);
  const endTime = hrTime(span.end);
  const events: TimedEvent[] = span.events.map((e) => ({
    name: e.name,
    time: hrTime(e.time),
    attributes: e.attributes,
    droppedAttributesCount: 0,
  }));
  const links: Link[] = span.links.map((l) => ({
    context: sampled(l.traceId, l.spanId),
    attributes: l.attributes,
  }));
  const status: SpanStatus =
    span.status.message === undefined
      ? { code: span.status.code }
      : { code: span.status.code, message: span.status.message };
  return {
    name: span.name,
    kind: span.kind === "server" ? SpanKind.SERVER : SpanKind.INTERNAL,
    spanContext: () => sampled(span.traceId, span.spanId),
    ...(span.parentSpanId ? { parentSpanContext: sampled(span.traceId, span.parentSpanId) } : {}),
    startTime,
    endTime,
    duration: hrDuration(startTime, endTime),
    status,
    attributes: span.attributes,
    links,
    events,
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** An OTLP JSON `ExportTraceServiceRequest` (`{resourceSpans: […]}`) holding these spans. */
export function otlpJson(spans: SpanData[], resource: Resource): Record<string, unknown> {
  // Loaded on the first trace asked for (it brings the metrics SDK along): start-up does without it.
  const { JsonTraceSerializer } = require("@opentelemetry/otlp-transformer") as typeof OtlpTransformer;
  const bytes = JsonTraceSerializer.serializeRequest(spans.map((s) => toReadableSpan(s, resource)));
  if (!bytes) return { resourceSpans: [] };
  return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
}
