/**
 * Automations and their invocations, webhook endpoints, deliveries and the outbox's events, as stored.
 */
// Automations and webhooks -------------------------------------------------------------------------------------

export type AutomationType = "periodic" | "once";
/** `completed`: a one-time automation's schedule has finished (its occurrence fired), not the agent's work. */
export type AutomationStatus = "active" | "paused" | "completed";

/** Who made an automation: a developer through the API, or a session's agent (its target) through a tool. */
export type AutomationCreatedBy =
  | { type: "developer" }
  | { type: "agent"; session_id: string; tool_call_id: string };

/** One user message of a new session's initial input (content parts as the official API writes them). */
export interface AutomationInputMessage {
  type: "message";
  role: "user";
  content: Array<{ type: "input_text"; text: string } | { type: "input_image"; image_url: string }>;
}

/** Where an automation's invocations go (validated when saved; the official request's fields). */
export type AutomationTarget =
  | {
      type: "new_session";
      /** A saved agent (exactly one of agent_id and agent). */
      agent_id: string | null;
      /** An inline agent configuration, as given (exactly one of agent_id and agent). */
      agent: Record<string, unknown> | null;
      /** `{type: "none"}` or `{type: "self_hosted", …}`, as given. */
      environment: { type: string } & Record<string, unknown>;
      input: AutomationInputMessage[];
      metadata: Record<string, string>;
      vault_ids: string[];
    }
  | { type: "existing_session"; session_id: string; instructions: string };

export interface AutomationRecord {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string;
  metadata: Record<string, string>;
  type: AutomationType;
  /** Periodic: the 5-field cron expression and the IANA timezone it is read in (null for one-time ones). */
  expression: string | null;
  timezone: string | null;
  /** One-time: when it runs (null for periodic ones). */
  run_at: number | null;
  status: AutomationStatus;
  /** The next occurrence still to fire (null: none, e.g. paused or completed). */
  next_run_at: number | null;
  target: AutomationTarget;
  created_by: AutomationCreatedBy;
}

/** `completed` means delivered (the session got its input), not that the agent's work is done. */
export type InvocationStatus = "queued" | "completed" | "failed" | "skipped";

/** One occurrence of an automation (or a manual run) and its delivery. */
export interface InvocationRecord {
  id: string;
  automation_id: string;
  project_id: string;
  created_at: number;
  /** The occurrence it is for (unique per automation); null for manual runs. */
  scheduled_at: number | null;
  source: "manual" | "automation";
  /** The automation as it was when the occurrence fired (scheduled invocations). */
  snapshot: AutomationRecord | null;
  /** What it delivers to (the automation's target when it was queued). */
  target: AutomationTarget;
  status: InvocationStatus;
  /** Skipped because an earlier invocation of the automation was still waiting to be delivered. */
  skip_reason: "pending_delivery" | null;
  /** The target or newly created session, once known. */
  session_id: string | null;
  error: { code: string; message: string } | null;
  /** How many times a deliverer claimed it. */
  claims: number;
  /** When a deliverer may claim it (again). */
  next_attempt_at: number;
  /** The deliverer holding it, until lease_until. */
  lease_owner: string | null;
  lease_until: number | null;
  completed_at: number | null;
}

export interface WebhookEndpointRecord {
  id: string;
  project_id: string;
  created_at: number;
  /** The last configuration or signing-secret change. */
  updated_at: number;
  name: string;
  url: string;
  event_types: string[];
  /** The signing secret, sealed (never in clear: kernel/secrets.ts). */
  secret: string;
  /** A masked hint of the secret (its last characters). */
  secret_hint: string;
  /** The previous secret, sealed, still signing until old_secret_expires_at (a rotation's overlap). */
  old_secret: string | null;
  old_secret_expires_at: number | null;
}

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";

/** One attempt to deliver a webhook event (`status_code` null: no HTTP answer; `error` says why it failed). */
export interface WebhookAttempt {
  at: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/**
 * A webhook event for one endpoint: the outbox row written with the log event that caused it, then its delivery
 * (at least once, retried with backoff until delivered or too old).
 */
export interface WebhookDeliveryRecord {
  id: string;
  endpoint_id: string;
  project_id: string;
  /** The session the event is about. */
  session_id: string | null;
  event_id: string;
  event_type: string;
  event_created_at: number;
  /** The event's `data`. */
  data: Record<string, unknown>;
  created_at: number;
  status: WebhookDeliveryStatus;
  /** Attempts so far (each claim is one). */
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
  /** The latest attempts, oldest first (a few). */
  attempt_log: WebhookAttempt[];
}

/** A webhook event derived from a log event when it is appended (store/outbox.ts), before its fan-out. */
export interface OutboxEvent {
  event_id: string;
  type: string;
  created_at: number;
  data: Record<string, unknown>;
}
