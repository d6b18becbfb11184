/**
 * Whether the engines can reach their model, for /health. Two signals:
 * - what the engines report: a request to the model that failed to connect (the engine says "Reconnecting…" and
 *   retries, for minutes, while the turn stays in progress) marks the model unreachable; a model response (token
 *   usage reported) marks it reachable again. A failure not reported again for {@link ENGINE_FAILURE_TTL_MS} is
 *   forgotten (the engine repeats it on every retry while the outage lasts).
 * - a probe: a TCP connection to the configured model URL's host and port (no request is sent), made when /health
 *   asks and the last one is older than {@link PROBE_EVERY_MS}, with a short timeout; so a model nobody can reach is
 *   seen before any turn runs into it.
 * Nothing here names the model URL: /health is open to everyone.
 */
import { connect } from "node:net";

export interface ModelStatus {
  /** null: not known yet. */
  reachable: boolean | null;
  /** Why it is not reachable (null when it is, or when it is not known). */
  reason: string | null;
  /** Unix seconds: since when it has not been reachable. */
  since: number | null;
}

export const UNKNOWN_MODEL_STATUS: ModelStatus = { reachable: null, reason: null, since: null };

/** How long a connection failure an engine reported counts without being reported again. */
export const ENGINE_FAILURE_TTL_MS = 5 * 60_000;
/** The most often the probe connects. */
export const PROBE_EVERY_MS = 30_000;
const PROBE_TIMEOUT_MS = 3000;

/** The kinds of engine errors that mean the model could not be connected to (not an answer it gave). */
const CONNECTION_ERRORS = [
  "httpConnectionFailed",
  "responseStreamConnectionFailed",
  "responseStreamDisconnected",
];

interface Failure {
  reason: string;
  since: number;
  last: number;
}

interface EngineError {
  message?: unknown;
  additionalDetails?: unknown;
  codexErrorInfo?: unknown;
}

/** An engine error that says the model could not be connected to: its description (without URLs), else null. */
export function connectionFailure(error: EngineError | null | undefined): string | null {
  if (!error || typeof error !== "object") return null;
  const info = error.codexErrorInfo;
  const kind =
    typeof info === "string" ? info : info && typeof info === "object" ? Object.keys(info)[0] : null;
  if (!kind || !CONNECTION_ERRORS.includes(kind)) return null;
  // A disconnection after an HTTP status is an answer of the model (or of a gateway), not a failure to connect.
  const status =
    info && typeof info === "object"
      ? (info as Record<string, { httpStatusCode?: unknown }>)[kind]?.httpStatusCode
      : null;
  if (typeof status === "number") return null;
  const details = typeof error.additionalDetails === "string" ? error.additionalDetails : "";
  const message = typeof error.message === "string" ? error.message : "";
  return withoutUrls(details || message || kind);
}

const withoutUrls = (text: string) =>
  text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s)'"<>]+/gi, "<url>").slice(0, 300);

/** Connects to the URL's host and port and closes at once: null when that worked, else why not. */
export function probeTcp(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | null> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve("the model URL is not a valid URL");
  }
  const port = Number(target.port) || (target.protocol === "https:" ? 443 : 80);
  const host = target.hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (why: string | null) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs / 1000} s`));
    socket.once("connect", () => done(null));
    socket.once("error", (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

export class ModelHealth {
  private engineFailure: Failure | null = null;
  private probeFailure: Failure | null = null;
  private probed = false;
  private lastProbe = -Infinity;
  private probing: Promise<void> | null = null;

  constructor(
    private readonly opts: {
      /** The model's base URL the engines use (null: none, e.g. no key: nothing to probe). */
      url: string | null;
      now?: () => number;
      probe?: (url: string) => Promise<string | null>;
    },
  ) {}

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** Every notification of every engine (cheap for the frequent ones). */
  observe(method: string, params: Record<string, unknown>): void {
    if (method === "thread/tokenUsage/updated") {
      this.engineFailure = null; // the model answered
      return;
    }
    let why: string | null = null;
    if (method === "error") why = connectionFailure(params.error as EngineError);
    else if (method === "turn/completed")
      why = connectionFailure((params.turn as { error?: EngineError })?.error);
    if (why === null) return;
    const now = this.now();
    const current = this.engineFailure;
    const fresh = current && now - current.last <= ENGINE_FAILURE_TTL_MS;
    this.engineFailure = {
      reason: `the engine cannot connect to the model (${why})`,
      since: fresh ? current.since : now,
      last: now,
    };
  }

  /** The status now; starts a probe in the background when the last one is old (see the module comment). */
  status(): ModelStatus {
    if (this.now() - this.lastProbe >= PROBE_EVERY_MS) void this.probeNow();
    const now = this.now();
    if (this.engineFailure && now - this.engineFailure.last > ENGINE_FAILURE_TTL_MS)
      this.engineFailure = null;
    const failure = this.engineFailure ?? this.probeFailure;
    if (failure) return { reachable: false, reason: failure.reason, since: failure.since / 1000 };
    return this.probed ? { reachable: true, reason: null, since: null } : UNKNOWN_MODEL_STATUS;
  }

  /** Resolves once a probe in flight is done (shutdown). */
  async close(): Promise<void> {
    await this.probing;
  }

  /** Probes now (one probe at a time); resolves when it is done. */
  probeNow(): Promise<void> {
    const url = this.opts.url;
    if (!url) return Promise.resolve();
    this.probing ??= (async () => {
      this.lastProbe = this.now();
      const why = await (this.opts.probe ?? probeTcp)(url);
      const now = this.now();
      this.probed = true;
      this.probeFailure = why
        ? {
            reason: `the model cannot be connected to (${why})`,
            since: this.probeFailure?.since ?? now,
            last: now,
          }
        : null;
    })().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }
}
