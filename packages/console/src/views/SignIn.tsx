import { type FormEvent, useState } from "react";
import type { Auth } from "../api/auth";
import { createClient, errorMessage } from "../api/client";
import { ErrorLine } from "../components/ErrorLine";

/** Checks a credential with one cheap API call before keeping it. */
async function verify(auth: Auth): Promise<void> {
  await createClient(auth).beta.agents.sessions.list({ limit: 1 });
}

export function SignIn(props: { onSignedIn(auth: Auth): void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const attempt = async (auth: Auth) => {
    setBusy(true);
    setError(null);
    try {
      await verify(auth);
      props.onSignedIn(auth);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (key.trim()) void attempt({ mode: "key", key: key.trim() });
  };

  return (
    <main className="sign-in">
      <h1>codex-agent-api</h1>
      <form onSubmit={submit} className="card">
        <label>
          API key or server token
          <input
            type="password"
            name="key"
            autoComplete="current-password"
            value={key}
            onChange={(e) => setKey(e.target.value)}
            placeholder="cas_… or the --token value"
          />
        </label>
        <button type="submit" disabled={busy || !key.trim()}>
          Sign in
        </button>
        <button type="button" className="secondary" disabled={busy} onClick={() => attempt({ mode: "none" })}>
          No auth (loopback server without keys)
        </button>
        <ErrorLine error={error} />
        <p className="hint">The key is kept in this tab only (sessionStorage).</p>
      </form>
    </main>
  );
}
