/**
 * Live trace export (OpenTelemetry, OTLP over HTTP), on only when an OTLP endpoint is configured: nothing is
 * created and no connection is attempted otherwise. Spans: one per HTTP request (a W3C `traceparent` from the
 * client makes it a child of the caller's span), and, when a turn ends, the turn's trace built from its stored
 * events (trace-model.ts: the same spans and ids `traces.list` returns), linked to the request that started it.
 */
import { createRequire } from "node:module";
import {
  defaultTextMapGetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type * as HttpExporterModule from "@opentelemetry/exporter-trace-otlp-http";
import type * as ProtoExporterModule from "@opentelemetry/exporter-trace-otlp-proto";
import type { Resource } from "@opentelemetry/resources";
import { BatchSpanProcessor, type SpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import type { Logger } from "pino";
import type { EventRecord, Queries, TurnRecord } from "../../store/types.js";
import type { TurnOrigin } from "./origins.js";
import { toReadableSpan } from "./otlp.js";
import { storedTurnSpans } from "./turn-traces.js";

export type Env = Record<string, string | undefined>;

/** How long a shutdown waits for the last spans to be exported. */
const SHUTDOWN_MS = 5000;

export type OtlpProtocol = "http/protobuf" | "http/json";

export interface TracingConfig {
  /** Where spans are posted (the traces URL: `…/v1/traces`). */
  url: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  timeoutMillis?: number;
  /** Delay between two batch exports. */
  scheduledDelayMillis?: number;
}

/** `k1=v1,k2=v2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS. */
export function parseOtlpHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (!key) continue;
    try {
      out[key] = decodeURIComponent(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}

const positive = (raw: string | undefined): number | undefined => {
  const n = raw === undefined || raw.trim() === "" ? Number.NaN : Number(raw);
  return Number.isFinite(n) && n > 0 ? n : undefined;
};

/**
 * The export settings from the standard OpenTelemetry environment variables; null when traces are not exported
 * (no endpoint, `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`). Throws on a protocol this server cannot
 * speak (grpc).
 */
export function tracingConfig(env: Env): TracingConfig | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return null;
  const exporters = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporters && !exporters.split(",").some((x) => x.trim() === "otlp")) return null;
  const signal = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!signal && !base) return null;
  const url = signal || `${base!.replace(/\/+$/, "")}/v1/traces`;
  try {
    new URL(url);
  } catch {
    throw new Error(`OTLP endpoint is not a URL: ${url}`);
  }
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL ||
    "http/protobuf"
  ).trim();
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    throw new Error(`OTLP protocol ${protocol} is not supported: use http/protobuf or http/json`);
  }
  const timeout = positive(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT);
  const delay = positive(env.OTEL_BSP_SCHEDULE_DELAY);
  return {
    url,
    protocol,
    headers: {
      ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    ...(timeout ? { timeoutMillis: timeout } : {}),
    ...(delay ? { scheduledDelayMillis: delay } : {}),
  };
}

/** What an HTTP request's span is started with. */
export interface RequestStart {
  method: string;
  /** The route pattern (`/v1/agents/sessions/:session_id`), if the request matched one. */
  route: string | undefined;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  dialect: string;
}

export interface RequestSpan {
  span: Span;
  ended: boolean;
}

const require = createRequire(import.meta.url);

type ExporterOptions = { url: string; headers: Record<string, string>; timeoutMillis?: number };

/** The OTLP exporter for the protocol, loaded only when traces are exported (a service without OTEL_* never is). */
function loadExporter(protocol: TracingConfig["protocol"], options: ExporterOptions): SpanExporter {
  if (protocol === "http/json") {
    const http = require("@opentelemetry/exporter-trace-otlp-http") as typeof HttpExporterModule;
    return new http.OTLPTraceExporter(options);
  }
  const proto = require("@opentelemetry/exporter-trace-otlp-proto") as typeof ProtoExporterModule;
  return new proto.OTLPTraceExporter(options);
}

export class Tracing {
  private readonly provider: TracerProvider | null = null;
  private readonly processor: BatchSpanProcessor | null = null;
  private readonly tracer: Tracer | null = null;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly deps: { store: Queries; logger: Logger; resource: Resource },
    readonly config: TracingConfig | null,
  ) {
    if (!config) return;
    const options = {
      url: config.url,
      headers: config.headers,
      ...(config.timeoutMillis ? { timeoutMillis: config.timeoutMillis } : {}),
    };
    const exporter = loadExporter(config.protocol, options);
    this.processor = new BatchSpanProcessor({
      exporter,
      ...(config.scheduledDelayMillis ? { scheduledDelayMillis: config.scheduledDelayMillis } : {}),
    });
    this.provider = new TracerProvider({ resource: deps.resource, spanProcessors: [this.processor] });
    this.tracer = this.provider.getTracer("codex-agent-api/http");
  }

  get enabled(): boolean {
    return this.tracer !== null;
  }

  /** Starts the span of an HTTP request (null when traces are not exported). */
  startRequest(r: RequestStart): RequestSpan | null {
    if (!this.tracer) return null;
    const parent = this.propagator.extract(ROOT_CONTEXT, r.headers, defaultTextMapGetter);
    const span = this.tracer.startSpan(
      r.route ? `${r.method} ${r.route}` : r.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": r.method,
          "url.path": r.path,
          ...(r.route ? { "http.route": r.route } : {}),
          "agent.api.dialect": r.dialect,
        },
      },
      parent,
    );
    return { span, ended: false };
  }

  /** Ends a request's span: answered with `status`, or null: the client went away first. */
  endRequest(s: RequestSpan, status: number | null): void {
    if (s.ended) return;
    s.ended = true;
    if (status === null) s.span.setAttribute("agent.http.aborted", true);
    else s.span.setAttribute("http.response.status_code", status);
    if (status !== null && status >= 500) {
      s.span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
    }
    s.span.end();
  }

  /** A turn ended (its terminal event is stored): export its trace, built from the store. */
  turnEnded(e: EventRecord, turn: TurnRecord, origin: TurnOrigin): void {
    const processor = this.processor;
    if (!processor) return;
    const links = origin.span
      ? [
          {
            traceId: origin.span.traceId,
            spanId: origin.span.spanId,
            attributes: { "agent.link": "started_by_request" },
          },
        ]
      : [];
    const job = storedTurnSpans(this.deps.store, e.session_id, turn, links).then(
      (spans) => {
        for (const span of spans) processor.onEnd(toReadableSpan(span, this.deps.resource));
      },
      (err: unknown) => {
        this.deps.logger.warn(
          { session: e.session_id, turn: turn.id, err: String(err) },
          "turn trace not built",
        );
      },
    );
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  /** Sends what is buffered (tests, shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
    await this.provider?.forceFlush();
  }

  /** Exports what is buffered and stops; an unreachable collector delays a shutdown by at most `maxMs`. */
  async shutdown(maxMs = SHUTDOWN_MS): Promise<void> {
    if (!this.provider) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, maxMs);
      timer.unref();
    });
    const done = Promise.all([...this.pending]).then(() => this.provider?.shutdown());
    await Promise.race([done, late]);
    clearTimeout(timer);
  }
}
