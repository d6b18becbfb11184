import type OpenAI from "openai";
import type { WebhookCreateParams, WebhookEndpoint } from "openai/resources/webhooks/webhooks";
import { type FormEvent, useState } from "react";
import { errorMessage } from "../api/client";
import { useApi } from "../api/context";
import { listDeliveries } from "../api/webhooks";
import { ErrorLine } from "../components/ErrorLine";
import { StatusBadge } from "../components/StatusBadge";
import { formatTime } from "../format";
import { usePoll } from "../hooks/usePoll";

type EventType = WebhookCreateParams["event_types"][number];

/** Creates an endpoint; its signing secret is shown once, here. */
function NewEndpoint(props: { client: OpenAI; onCreated(id: string, secret: string): void }) {
  const types = usePoll((signal) => props.client.webhooks.eventTypes.list({ signal }), 60_000, "event-types");
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const created = await props.client.webhooks.create({
        name,
        url,
        event_types: [...chosen] as EventType[],
      });
      setName("");
      setUrl("");
      setChosen(new Set());
      props.onCreated(created.id, created.signing_secret);
    } catch (err) {
      setError(errorMessage(err));
    }
  };
  const toggle = (t: string) =>
    setChosen((prev) => {
      const next = new Set(prev);
      if (!next.delete(t)) next.add(t);
      return next;
    });
  return (
    <form className="card editor" aria-label="new webhook endpoint" onSubmit={(e) => void submit(e)}>
      <h3>New endpoint</h3>
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <label>
        URL
        <input value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://…" required />
      </label>
      <fieldset className="event-types">
        <legend>Events</legend>
        {(types.data?.data ?? []).map((t) => (
          <label key={t} className="check">
            <input type="checkbox" checked={chosen.has(t)} onChange={() => toggle(t)} />
            {t}
          </label>
        ))}
      </fieldset>
      <button type="submit" disabled={!name || !url || chosen.size === 0}>
        Create endpoint
      </button>
      <ErrorLine error={error} />
    </form>
  );
}

/** One endpoint: its deliveries (refreshed every few seconds), a test event, secret rotation, deletion. */
function EndpointPanel(props: { client: OpenAI; endpoint: WebhookEndpoint; onChanged(): void }) {
  const { client, endpoint } = props;
  const deliveries = usePoll((signal) => listDeliveries(client, endpoint.id, signal), 3000, endpoint.id);
  const [note, setNote] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const act = async (what: () => Promise<string>) => {
    setNote(null);
    try {
      setNote(await what());
    } catch (err) {
      setNote(errorMessage(err));
    }
  };
  return (
    <section className="card" aria-label={`endpoint ${endpoint.name}`}>
      <h3>{endpoint.name}</h3>
      <p className="muted">
        <code>{endpoint.url}</code> · {endpoint.event_types.join(", ")}
      </p>
      <div className="row-actions">
        <button
          type="button"
          className="secondary"
          onClick={() =>
            void act(async () => {
              const r = await client.webhooks.test(endpoint.id, {
                event_type: endpoint.event_types[0] as EventType,
              });
              return `Test event ${r.event_type}: answered ${r.status_code}`;
            })
          }
        >
          Send test event
        </button>
        <button
          type="button"
          className="secondary"
          onClick={() =>
            void act(async () => {
              const r = await client.webhooks.rotateSecret(endpoint.id, {
                keep_old_secret_active_for_24_hours: true,
              });
              setSecret(r.signing_secret);
              return "New secret (the old one keeps signing for 24 hours)";
            })
          }
        >
          Rotate secret
        </button>
        <button
          type="button"
          className="danger"
          onClick={() =>
            void act(async () => {
              await client.webhooks.delete(endpoint.id);
              props.onChanged();
              return "Deleted";
            })
          }
        >
          Delete
        </button>
      </div>
      {note && <output className="note">{note}</output>}
      {secret && (
        <p>
          Signing secret (shown once): <code data-testid="rotated-secret">{secret}</code>
        </p>
      )}
      <ErrorLine error={deliveries.error} />
      <table className="list" aria-label="deliveries">
        <thead>
          <tr>
            <th>Event</th>
            <th>About</th>
            <th>Status</th>
            <th>Attempts</th>
            <th>Last answer</th>
            <th>At</th>
          </tr>
        </thead>
        <tbody>
          {(deliveries.data ?? []).map((d) => (
            <tr key={d.id} data-event-type={d.event.type} data-status={d.status}>
              <td>{d.event.type}</td>
              <td>
                <code>{d.event.data.id ?? ""}</code>
              </td>
              <td>
                <StatusBadge status={d.status} />
              </td>
              <td>{d.attempts}</td>
              <td>{d.last_attempt ? (d.last_attempt.status_code ?? d.last_attempt.error ?? "") : "—"}</td>
              <td>{formatTime(d.delivered_at ?? d.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {deliveries.data?.length === 0 && <p className="muted">No deliveries yet.</p>}
    </section>
  );
}

/** Webhook endpoints: create one (its secret shown once), then watch its deliveries and their attempts. */
export function WebhooksView() {
  const { client } = useApi();
  const endpoints = usePoll((signal) => client.webhooks.list({ limit: 100 }, { signal }), 10_000, "webhooks");
  const [selected, setSelected] = useState<string | null>(null);
  const [created, setCreated] = useState<{ id: string; secret: string } | null>(null);
  const list = endpoints.data?.data ?? [];
  const current = list.find((e) => e.id === selected) ?? null;
  return (
    <section className="webhooks">
      <h2>Webhooks</h2>
      <div className="split">
        <div>
          <ErrorLine error={endpoints.error} />
          <table className="list" aria-label="webhook endpoints">
            <thead>
              <tr>
                <th>Name</th>
                <th>URL</th>
                <th>Events</th>
              </tr>
            </thead>
            <tbody>
              {list.map((e) => (
                <tr key={e.id} className={selected === e.id ? "selected" : undefined}>
                  <td>
                    <button type="button" className="link" onClick={() => setSelected(e.id)}>
                      {e.name}
                    </button>
                  </td>
                  <td>
                    <code>{e.url}</code>
                  </td>
                  <td>{e.event_types.length}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {created && (
            <p className="card">
              Endpoint created. Its signing secret, shown only now:{" "}
              <code data-testid="signing-secret">{created.secret}</code>
            </p>
          )}
          {current && (
            <EndpointPanel
              key={current.id}
              client={client}
              endpoint={current}
              onChanged={() => {
                setSelected(null);
                endpoints.refresh();
              }}
            />
          )}
        </div>
        <NewEndpoint
          client={client}
          onCreated={(id, secret) => {
            setCreated({ id, secret });
            setSelected(id);
            endpoints.refresh();
          }}
        />
      </div>
    </section>
  );
}
