/** The credential the console signed in with: kept in sessionStorage only (gone with the tab). */
export type Auth = { mode: "key"; key: string } | { mode: "none" };

const STORAGE_KEY = "codex-agent-api.console.auth";

export function loadAuth(): Auth | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== "object" || parsed === null) return null;
    const o = parsed as { mode?: unknown; key?: unknown };
    if (o.mode === "none") return { mode: "none" };
    if (o.mode === "key" && typeof o.key === "string" && o.key) return { mode: "key", key: o.key };
    return null;
  } catch {
    return null;
  }
}

export function saveAuth(auth: Auth): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(auth));
}

export function clearAuth(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
