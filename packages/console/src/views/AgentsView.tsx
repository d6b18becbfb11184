import { useState } from "react";
import { useApi } from "../api/context";
import type { Agent } from "../api/types";
import { AgentEditor } from "../components/AgentEditor";
import { ErrorLine } from "../components/ErrorLine";
import { formatTime } from "../format";
import { usePoll } from "../hooks/usePoll";

/** Saved agents, and an editor for a new or the selected one. */
export function AgentsView() {
  const { client } = useApi();
  const agents = usePoll((signal) => client.beta.agents.list({ limit: 100 }, { signal }), 10_000, "agents");
  const [selected, setSelected] = useState<Agent | null>(null);
  const [editorKey, setEditorKey] = useState(0);

  const edit = (agent: Agent | null) => {
    setSelected(agent);
    setEditorKey((n) => n + 1);
  };

  return (
    <section className="agents">
      <h2>Agents</h2>
      <div className="split">
        <div>
          <button type="button" onClick={() => edit(null)}>
            New agent
          </button>
          <ErrorLine error={agents.error} />
          <table className="list" aria-label="agents">
            <thead>
              <tr>
                <th>Name</th>
                <th>Model</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {(agents.data?.data ?? []).map((a) => (
                <tr key={a.id} className={selected?.id === a.id ? "selected" : undefined}>
                  <td>
                    <button type="button" className="link" onClick={() => edit(a)}>
                      {a.name ?? a.id}
                    </button>
                  </td>
                  <td>{a.model}</td>
                  <td>{formatTime(a.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <AgentEditor
          key={editorKey}
          agent={selected}
          onSaved={(a) => {
            setSelected(a);
            agents.refresh();
          }}
        />
      </div>
    </section>
  );
}
