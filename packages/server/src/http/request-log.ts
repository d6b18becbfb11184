/**
 * One log line per request, when it has been answered: method, URL (query values that may be secrets replaced
 * by "[redacted]"), status and duration. Headers (Authorization, X-Access-Token) are never logged. Health probes
 * (load balancers) are logged at debug level only.
 */
import { type FastifyReply, type FastifyRequest, LogController } from "fastify";

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

export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: req.method,
      url: redactUrl(req.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ...(error ? { err: error.message } : {}),
    };
    const health = req.url === "/health" || req.url.startsWith("/health?");
    if (error) reply.log.error(line, "request");
    else if (health) reply.log.debug(line, "request");
    else reply.log.info(line, "request");
  }
}
