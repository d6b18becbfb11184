import { useApi } from "../api/context";
import { fetchHealth } from "../api/health";
import { ErrorLine } from "../components/ErrorLine";
import { usePoll } from "../hooks/usePoll";

/** GET /health: the engine processes, their loaded threads, the turns running now, the sandboxes. */
export function HealthView() {
  const { auth } = useApi();
  const health = usePoll((signal) => fetchHealth(auth, signal), 2_000, "health");
  const h = health.data;
  return (
    <section className="health">
      <h2>Engines</h2>
      <ErrorLine error={health.error} />
      {h && (
        <>
          <p>
            Status <strong data-testid="health-status">{h.status}</strong> · active turns{" "}
            <strong data-testid="active-turns">{h.active_turns}</strong>
          </p>
          <table className="list" aria-label="engines">
            <thead>
              <tr>
                <th>Engine</th>
                <th>Process</th>
                <th>Loaded threads</th>
              </tr>
            </thead>
            <tbody>
              {h.engines.map((e) => (
                <tr key={e.index}>
                  <td>#{e.index}</td>
                  <td>{e.running ? "running" : "not started"}</td>
                  <td>{e.threads}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Sandboxes</h2>
          {h.sandboxes?.backend === "container" ? (
            <table className="list" aria-label="sandboxes">
              <thead>
                <tr>
                  <th>Warm (pooled)</th>
                  <th>Being made</th>
                  <th>In use</th>
                  <th>Stopped (idle)</th>
                </tr>
              </thead>
              <tbody>
                <tr>
                  <td>{h.sandboxes.warm}</td>
                  <td>{h.sandboxes.creating}</td>
                  <td>{h.sandboxes.in_use}</td>
                  <td>{h.sandboxes.stopped}</td>
                </tr>
              </tbody>
            </table>
          ) : (
            <p data-testid="sandbox-backend">
              Local backend: commands run in the engine's sandbox on this host (no container per session).
            </p>
          )}
        </>
      )}
    </section>
  );
}
