/**
 * The background work of automations and webhooks, on every instance: firing due automation occurrences,
 * delivering their invocations, delivering the webhook outbox. Started once the service has recovered; stopped
 * first on shutdown (before running turns are ended), waiting for what is in progress.
 */
import type { AutomationDeliverer } from "./automations/deliverer.js";
import type { AutomationScheduler } from "./automations/scheduler.js";
import type { WebhookDeliverer } from "./webhooks/deliverer.js";

export class BackgroundWorkers {
  constructor(
    readonly scheduler: AutomationScheduler,
    readonly invocations: AutomationDeliverer,
    readonly webhooks: WebhookDeliverer,
  ) {}

  start(): void {
    this.scheduler.start();
    this.invocations.start();
    this.webhooks.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.scheduler.stop(), this.invocations.stop(), this.webhooks.stop()]);
  }
}
