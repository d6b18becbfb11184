/** The webhook event types this server sends (sessions' status, environments' lifecycle). */
export const WEBHOOK_EVENT_TYPES = [
  "agent.session.created",
  "agent.session.in_progress",
  "agent.session.action_required",
  "agent.session.idle",
  "agent.session.failed",
  "agent.environment.ready",
  "agent.environment.failed",
  "agent.environment.expired",
  // This server's extension: a repository's changes committed (and pushed) by the service.
  "agent.session.repository.output",
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
