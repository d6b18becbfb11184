import { type FormEvent, useState } from "react";
import { errorMessage } from "../api/client";
import { useApi } from "../api/context";
import type { Agent } from "../api/types";
import { ErrorLine } from "./ErrorLine";

/** Creates an agent (no `agent`) or updates one: model, name, instructions. */
export function AgentEditor(props: { agent: Agent | null; onSaved(agent: Agent): void }) {
  const { client } = useApi();
  const [model, setModel] = useState(props.agent?.model ?? "");
  const [name, setName] = useState(props.agent?.name ?? "");
  const [instructions, setInstructions] = useState(props.agent?.instructions ?? "");
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const fields = { model: model.trim(), name: name.trim() || null, instructions: instructions || null };
      const agent = props.agent
        ? await client.beta.agents.update(props.agent.id, fields)
        : await client.beta.agents.create(fields);
      setSaved(true);
      props.onSaved(agent);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card editor" onSubmit={submit} aria-label="agent editor">
      <h3>{props.agent ? `Edit ${props.agent.name ?? props.agent.id}` : "New agent"}</h3>
      <label>
        Model
        <input name="model" required value={model} onChange={(e) => setModel(e.target.value)} />
      </label>
      <label>
        Name
        <input name="name" value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Instructions
        <textarea
          name="instructions"
          rows={6}
          value={instructions}
          onChange={(e) => setInstructions(e.target.value)}
        />
      </label>
      <button type="submit" disabled={busy || !model.trim()}>
        {props.agent ? "Save" : "Create"}
      </button>
      {saved && <p className="ok">Saved.</p>}
      <ErrorLine error={error} />
    </form>
  );
}
