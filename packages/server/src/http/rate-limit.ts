/**
 * Requests per minute per API key (per client address for requests without a key), with 429 and Retry-After in
 * the dialect's error shape. Counted after authentication, so a key's budget is its own.
 */
import rateLimit from "@fastify/rate-limit";
import { ApiError } from "../kernel/errors.js";
import type { App } from "./app-types.js";

export function installRateLimit(app: App, perMinute: number): void {
  if (perMinute <= 0) return;
  app.register(rateLimit, {
    global: true,
    max: perMinute,
    timeWindow: 60_000,
    hook: "preHandler",
    keyGenerator: (req) => (req.keyId ? `key:${req.keyId}` : `ip:${req.ip}`),
    allowList: (req) => req.url === "/health" || req.url.startsWith("/health?"),
    errorResponseBuilder: (_req, context) =>
      new ApiError(
        "rate_limited",
        `Rate limit exceeded: ${context.max} requests per minute; retry in ${context.after}`,
        null,
        "rate_limit_exceeded",
      ),
  });
}
