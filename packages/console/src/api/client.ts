import OpenAI from "openai";
import type { Auth } from "./auth";

/**
 * The official SDK, unchanged, against this origin's API. Without auth (a loopback server with no token or
 * keys) the SDK still needs some key: the server ignores credentials it was not configured with.
 */
export function createClient(auth: Auth): OpenAI {
  return new OpenAI({
    apiKey: auth.mode === "key" ? auth.key : "no-auth",
    baseURL: `${location.origin}/v1`,
    dangerouslyAllowBrowser: true,
    maxRetries: 1,
  });
}

/** A readable message for an SDK (or any) error. */
export function errorMessage(err: unknown): string {
  if (err instanceof OpenAI.APIError) {
    const status = err.status ? `${err.status}: ` : "";
    return `${status}${err.message.replace(/^\d{3}\s+/, "")}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export function isNotFound(err: unknown): boolean {
  return err instanceof OpenAI.NotFoundError;
}
