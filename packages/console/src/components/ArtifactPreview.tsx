import { useEffect, useState } from "react";
import { errorMessage } from "../api/client";
import { useApi } from "../api/context";
import type { SessionArtifact } from "../api/types";
import { ErrorLine } from "./ErrorLine";

/** Text shown in full up to this size; larger files are only offered for download. */
const TEXT_LIMIT = 512 * 1024;

type Loaded = { url: string; type: string; text: string | null; size: number };

const isText = (type: string) => /^text\/|[/+](json|xml|javascript|yaml|x-sh)\b/.test(type);

/**
 * The artifact's content, fetched with the signed-in credential (the SDK's `artifacts.content`) into a blob: the
 * page never navigates to the content URL. Text is shown, images are drawn from the blob, anything can be saved.
 */
export function ArtifactPreview(props: { artifact: SessionArtifact; name: string; onClose(): void }) {
  const { client } = useApi();
  const { artifact } = props;
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let url: string | null = null;
    let cancelled = false;
    (async () => {
      try {
        const res = await client.beta.agents.sessions.artifacts.content(artifact.id, {
          session_id: artifact.session_id,
        });
        const blob = await res.blob();
        if (cancelled) return;
        const type = (res.headers.get("content-type") ?? blob.type).split(";")[0]!.trim();
        const text = isText(type) && blob.size <= TEXT_LIMIT ? await blob.text() : null;
        url = URL.createObjectURL(blob);
        if (cancelled) URL.revokeObjectURL(url);
        else setLoaded({ url, type, text, size: blob.size });
      } catch (err) {
        if (!cancelled) setError(errorMessage(err));
      }
    })();
    return () => {
      cancelled = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [client, artifact.id, artifact.session_id]);

  const fileName = props.name.split("/").pop() || "artifact";
  return (
    <div className="preview" data-testid="artifact-preview">
      <div className="preview-head">
        <code>{props.name}</code>
        <span className="muted">{loaded?.type}</span>
        <span className="spacer" />
        {loaded && (
          <a href={loaded.url} download={fileName} className="button secondary small">
            Download
          </a>
        )}
        <button type="button" className="secondary small" onClick={props.onClose}>
          Close
        </button>
      </div>
      <ErrorLine error={error} />
      {!loaded && !error && <p className="muted">Loading…</p>}
      {loaded?.type.startsWith("image/") && <img src={loaded.url} alt={props.name} />}
      {loaded?.text !== null && loaded?.text !== undefined && <pre className="output">{loaded.text}</pre>}
      {loaded && !loaded.type.startsWith("image/") && loaded.text === null && (
        <p className="muted">No preview for {loaded.type}; download it instead.</p>
      )}
    </div>
  );
}
