import type OpenAI from "openai";

/** One delivery of an event to an endpoint, with its attempts (this server's extension of the webhook API). */
export interface WebhookDelivery {
  id: string;
  created_at: number;
  event: { id: string; type: string; created_at: number; data: { id?: string } };
  status: "pending" | "delivered" | "failed";
  attempts: number;
  next_attempt_at: number | null;
  delivered_at: number | null;
  last_attempt: { at: number; status_code: number | null; error: string | null; duration_ms: number } | null;
}

/** An endpoint's deliveries, newest first. */
export async function listDeliveries(
  client: OpenAI,
  endpointId: string,
  signal?: AbortSignal,
): Promise<WebhookDelivery[]> {
  const page = await client.get<{ data: WebhookDelivery[] }>(
    `/webhook_endpoints/${encodeURIComponent(endpointId)}/deliveries`,
    { query: { limit: 50 }, ...(signal ? { signal } : {}) },
  );
  return page.data;
}
