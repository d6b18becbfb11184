import type { Auth } from "./auth";
import type { Health } from "./types";

/** GET /health (outside /v1, open without a key; the key is sent anyway). */
export async function fetchHealth(auth: Auth, signal?: AbortSignal): Promise<Health> {
  const res = await fetch(`${location.origin}/health`, {
    headers: auth.mode === "key" ? { authorization: `Bearer ${auth.key}` } : {},
    ...(signal ? { signal } : {}),
  });
  if (!res.ok) throw new Error(`GET /health: ${res.status}`);
  return (await res.json()) as Health;
}
