import { useState } from "react";
import { useApi } from "../api/context";
import type { AgentSession, SessionStatus } from "../api/types";
import { ErrorLine } from "../components/ErrorLine";
import { Link } from "../components/Link";
import { NewSessionForm } from "../components/NewSessionForm";
import { StatusBadge } from "../components/StatusBadge";
import { formatMetadata, formatTime, formatUsage, parseMetadata } from "../format";
import { usePoll } from "../hooks/usePoll";

const STATUSES: SessionStatus[] = ["idle", "in_progress", "requires_action", "failed"];
const POLL_MS = 2_000;

/** Sessions with their live status (polled), filtered by status and searched by metadata. */
export function SessionsView() {
  const { client } = useApi();
  const [status, setStatus] = useState<SessionStatus | "all">("all");
  const [search, setSearch] = useState("");
  const metadata = parseMetadata(search);
  const key = JSON.stringify(metadata);
  const sessions = usePoll(
    (signal) =>
      client.beta.agents.sessions.list(
        { limit: 100, ...(Object.keys(metadata).length ? { metadata } : {}) },
        { signal },
      ),
    POLL_MS,
    key,
  );
  const page = sessions.data;
  const rows: AgentSession[] = (page?.data ?? []).filter((s) => status === "all" || s.status === status);

  return (
    <section className="sessions">
      <h2>Sessions</h2>
      <NewSessionForm />
      <div className="filters">
        <label>
          Status
          <select
            name="status"
            value={status}
            onChange={(e) => setStatus(e.target.value as SessionStatus | "all")}
          >
            <option value="all">all</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace(/_/g, " ")}
              </option>
            ))}
          </select>
        </label>
        <label>
          Metadata
          <input
            name="metadata-search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            placeholder="key=value, other=value"
          />
        </label>
      </div>
      <ErrorLine error={sessions.error} />
      <table className="list" aria-label="sessions">
        <thead>
          <tr>
            <th>Session</th>
            <th>Agent</th>
            <th>Status</th>
            <th>Last active</th>
            <th>Usage</th>
            <th>Metadata</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => (
            <tr key={s.id} data-session-id={s.id}>
              <td>
                <Link to={{ name: "session", id: s.id }}>{s.id}</Link>
              </td>
              <td>{s.agent.name ?? s.agent.model}</td>
              <td>
                <StatusBadge status={s.status} />
              </td>
              <td>{formatTime(s.last_active_at)}</td>
              <td>{formatUsage(s.usage)}</td>
              <td className="muted">{formatMetadata(s.metadata)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page && rows.length === 0 && <p className="muted">No sessions match.</p>}
      {page?.hasNextPage() && <p className="muted">Showing the 100 most recent sessions.</p>}
    </section>
  );
}
