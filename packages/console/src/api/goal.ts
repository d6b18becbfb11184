import type OpenAI from "openai";
import { isNotFound } from "./client";
import type { Goal, GoalCaps } from "./types";

/** The goal resource is this server's extension: the SDK's generic verbs, with the dialect header. */
const beta = { headers: { "OpenAI-Beta": "agents=v1" } };
const path = (sessionId: string) => `/agents/sessions/${encodeURIComponent(sessionId)}/goal`;

/** The session's goal, or null when it has none. */
export async function getGoal(client: OpenAI, sessionId: string): Promise<Goal | null> {
  try {
    return await client.get<Goal>(path(sessionId), beta);
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

export function changeGoal(
  client: OpenAI,
  sessionId: string,
  body: { status?: "active" | "paused"; objective?: string } & GoalCaps,
): Promise<Goal> {
  return client.post<Goal>(path(sessionId), { ...beta, body });
}

export async function clearGoal(client: OpenAI, sessionId: string): Promise<void> {
  await client.delete(path(sessionId), beta);
}
