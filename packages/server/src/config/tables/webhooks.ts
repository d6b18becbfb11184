/** Webhook deliveries. */
import { table, toggle, value } from "../option.js";
import { int } from "../schemas.js";

export const webhooks = table(null, {
  /** Webhook URLs must be https:// unless this is set. */
  webhookAllowHttp: toggle({
    flag: "webhook-allow-http",
    env: "AGENT_WEBHOOK_ALLOW_HTTP",
    help: "deliver webhooks to http:// URLs too, not only https:// (AGENT_WEBHOOK_ALLOW_HTTP=1)",
  }),
  /** How long a failing webhook delivery is retried (seconds after its event; given in hours). */
  webhookRetrySeconds: value({
    flag: "webhook-retry-hours",
    arg: "<n>",
    env: "AGENT_WEBHOOK_RETRY_HOURS",
    schema: int({ min: 1, max: 720, times: 3600 }),
    default: 72 * 3600,
    help: [
      "retry a failing webhook delivery this long after its event (AGENT_WEBHOOK_RETRY_HOURS,",
      "default 72)",
    ],
  }),
});
