/**
 * One log line per request, when it has been answered: method, URL (query values that may be secrets replaced
 * by "[redacted]"), status and duration. Headers (Authorization, X-Access-Token) are never logged.
 */
import type { App } from "./app-types.js";

const SECRET_PARAM = /token|key|secret|password|auth|sig/i;

export function redactUrl(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  let changed = false;
  for (const name of [...params.keys()]) {
    if (SECRET_PARAM.test(name)) {
      params.set(name, "[redacted]");
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q)}?${params.toString()}` : url;
}

export function installRequestLog(app: App): void {
  app.addHook("onResponse", async (req, reply) => {
    // Health probes (load balancers) would drown everything else: debug level.
    const level = req.url === "/health" || req.url.startsWith("/health?") ? "debug" : "info";
    req.log[level](
      {
        method: req.method,
        url: redactUrl(req.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      "request",
    );
  });
}
