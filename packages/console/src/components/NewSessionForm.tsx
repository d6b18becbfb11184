import { type FormEvent, useEffect, useState } from "react";
import { errorMessage } from "../api/client";
import { useApi } from "../api/context";
import type { Agent } from "../api/types";
import { parseMetadata } from "../format";
import { navigate } from "../router";
import { ErrorLine } from "./ErrorLine";

/** Creates a session from a saved agent or a model, then opens it. */
export function NewSessionForm() {
  const { client } = useApi();
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agentId, setAgentId] = useState("");
  const [model, setModel] = useState("");
  const [metadata, setMetadata] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    client.beta.agents
      .list({ limit: 100 })
      .then((p) => setAgents(p.data))
      .catch((err: unknown) => setError(errorMessage(err)));
  }, [client]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await client.beta.agents.sessions.create({
        environment: { type: "none" },
        ...(agentId ? { agent_id: agentId } : {}),
        ...(model.trim() ? { agent: { model: model.trim() } } : {}),
        metadata: parseMetadata(metadata),
      });
      navigate({ name: "session", id: session.id });
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <form className="card inline" onSubmit={submit} aria-label="new session">
      <label>
        Agent
        <select name="agent" value={agentId} onChange={(e) => setAgentId(e.target.value)}>
          <option value="">(none: server default)</option>
          {agents.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name ?? a.id} · {a.model}
            </option>
          ))}
        </select>
      </label>
      <label>
        Model
        <input
          name="model"
          value={model}
          onChange={(e) => setModel(e.target.value)}
          placeholder="server default"
        />
      </label>
      <label>
        Metadata
        <input
          name="metadata"
          value={metadata}
          onChange={(e) => setMetadata(e.target.value)}
          placeholder="key=value, …"
        />
      </label>
      <button type="submit" disabled={busy}>
        New session
      </button>
      <ErrorLine error={error} />
    </form>
  );
}
