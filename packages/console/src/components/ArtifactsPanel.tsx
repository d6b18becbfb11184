import { useEffect, useState } from "react";
import { useApi } from "../api/context";
import type { SessionArtifact } from "../api/types";
import { usePoll } from "../hooks/usePoll";
import { ArtifactPreview } from "./ArtifactPreview";
import { ErrorLine } from "./ErrorLine";

/**
 * The artifact's path inside the session's workspace: this server's artifact id is the unpadded base64url of
 * that path (the API's `path` is absolute).
 */
export function relativePath(a: SessionArtifact): string {
  try {
    const b64 = a.id.replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const decoded = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return decoded && a.path.endsWith(decoded) ? decoded : a.path;
  } catch {
    return a.path;
  }
}

/** Files in the session's workspace (re-listed after every turn), and a preview of the one picked. */
export function ArtifactsPanel(props: { sessionId: string; revision: number }) {
  const { client } = useApi();
  const list = usePoll(
    (signal) => client.beta.agents.sessions.artifacts.list(props.sessionId, { limit: 100 }, { signal }),
    30_000,
    props.sessionId,
  );
  const { refresh } = list;
  useEffect(() => {
    if (props.revision > 0) refresh();
  }, [props.revision, refresh]);
  const [open, setOpen] = useState<SessionArtifact | null>(null);
  const artifacts = list.data?.data ?? [];

  return (
    <section className="card artifacts" aria-label="artifacts">
      <h3>
        Artifacts{" "}
        <button type="button" className="secondary small" onClick={refresh}>
          Refresh
        </button>
      </h3>
      <ErrorLine error={list.error} />
      {artifacts.length === 0 && <p className="muted">No files yet.</p>}
      <ul className="artifact-list">
        {artifacts.map((a) => (
          <li key={a.id} className={open?.id === a.id ? "selected" : undefined}>
            <button type="button" className="link" onClick={() => setOpen(a)}>
              {relativePath(a)}
            </button>{" "}
            <span className="muted">{a.size_bytes} B</span>
          </li>
        ))}
      </ul>
      {list.data?.hasNextPage() && <p className="muted">Showing the first 100 files.</p>}
      {open && (
        <ArtifactPreview
          key={open.id}
          artifact={open}
          name={relativePath(open)}
          onClose={() => setOpen(null)}
        />
      )}
    </section>
  );
}
