/** Automations (and the webhook deliverer, which shares their poll). */
import { table, value } from "../option.js";
import { int } from "../schemas.js";

export const automations = table(null, {
  /** How often each instance looks for due automations and deliveries (ms). */
  automationPollMs: value({
    env: "AGENT_AUTOMATION_POLL_MS",
    schema: int({ min: 50, max: 60_000 }),
    default: 1000,
    help: [
      "(AGENT_AUTOMATION_POLL_MS: how often due automations and deliveries are looked for,",
      "default 1000)",
    ],
  }),
});
