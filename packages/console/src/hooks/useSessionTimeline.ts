/**
 * Everything the session view shows, kept current: history from the items API (newest page first, older pages
 * on demand) and the session's event stream, which reconnects after a drop and resumes after the last event it
 * delivered (its `event_id` as `Last-Event-ID`), so nothing is lost or shown twice.
 */
import type OpenAI from "openai";
import type { AgentSessionItemsPage } from "openai/resources/beta/agents/agents";
import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { errorMessage } from "../api/client";
import { getGoal } from "../api/goal";
import type { StreamEvent } from "../api/types";
import { emptyTimeline, reduce, type Timeline } from "../state/timeline";

const PAGE_SIZE = 50;
/** Event ids remembered for de-duplication (the SDK helpers keep a window of the same size). */
const SEEN_WINDOW = 1024;

export type Connection = "connecting" | "live" | "reconnecting";

export interface SessionTimeline {
  timeline: Timeline;
  connection: Connection;
  /** How many times the stream was opened again after a drop. */
  reconnects: number;
  hasOlder: boolean;
  loadingOlder: boolean;
  loadOlder(): void;
  /** Fetches a turn the timeline has items of but no events for (history). */
  ensureTurn(turnId: string): void;
  refreshGoal(): void;
  loadError: string | null;
}

const wait = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

export function useSessionTimeline(client: OpenAI, sessionId: string): SessionTimeline {
  const [timeline, dispatch] = useReducer(reduce, emptyTimeline);
  const [connection, setConnection] = useState<Connection>("connecting");
  const [reconnects, setReconnects] = useState(0);
  const [hasOlder, setHasOlder] = useState(false);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  const olderPage = useRef<AgentSessionItemsPage | null>(null);
  const requestedTurns = useRef(new Set<string>());

  // The live stream, for as long as the view is open.
  useEffect(() => {
    const abort = new AbortController();
    const seen = new Set<string>();
    let cursor: string | null = null;
    let failures = 0;
    const run = async () => {
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        if (attempt > 0) {
          setConnection("reconnecting");
          setReconnects((n) => n + 1);
          await wait(Math.min(250 * 2 ** failures, 5_000), abort.signal);
          if (abort.signal.aborted) return;
        }
        try {
          const stream = await client.beta.agents.sessions.events.stream(sessionId, {
            signal: abort.signal,
            maxRetries: 0,
            timeout: 24 * 3600 * 1000,
            ...(cursor ? { headers: { "Last-Event-ID": cursor } } : {}),
          });
          setConnection("live");
          failures = 0;
          for await (const raw of stream) {
            // The stream is typed with the SDK's union; this server adds agent.session.goal.updated.
            const event = raw as StreamEvent;
            if (seen.has(event.event_id)) continue;
            seen.add(event.event_id);
            if (seen.size > SEEN_WINDOW) seen.delete(seen.values().next().value as string);
            // This server takes an event_id as Last-Event-ID: the stream resumes right after that event.
            cursor = event.event_id;
            dispatch({ type: "event", event });
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          failures++;
          console.warn(`session stream dropped: ${errorMessage(err)}`);
        }
      }
    };
    void run();
    return () => abort.abort();
  }, [client, sessionId]);

  // The session, its newest history page and its goal.
  useEffect(() => {
    let cancelled = false;
    olderPage.current = null;
    requestedTurns.current.clear();
    setHasOlder(false);
    setLoadError(null);
    (async () => {
      try {
        const [session, page, goal] = await Promise.all([
          client.beta.agents.sessions.retrieve(sessionId),
          client.beta.agents.sessions.items.list(sessionId, { order: "desc", limit: PAGE_SIZE }),
          getGoal(client, sessionId),
        ]);
        if (cancelled) return;
        dispatch({ type: "session", session });
        dispatch({ type: "goal", goal });
        dispatch({ type: "history", items: [...page.data].reverse() });
        olderPage.current = page;
        setHasOlder(page.hasNextPage());
      } catch (err) {
        if (!cancelled) setLoadError(errorMessage(err));
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [client, sessionId]);

  const loadOlder = useCallback(() => {
    const page = olderPage.current;
    if (!page || loadingOlder || !page.hasNextPage()) return;
    setLoadingOlder(true);
    page
      .getNextPage()
      .then((next) => {
        olderPage.current = next;
        dispatch({ type: "history", items: [...next.data].reverse() });
        setHasOlder(next.hasNextPage());
      })
      .catch((err: unknown) => setLoadError(errorMessage(err)))
      .finally(() => setLoadingOlder(false));
  }, [loadingOlder]);

  const ensureTurn = useCallback(
    (turnId: string) => {
      if (requestedTurns.current.has(turnId)) return;
      requestedTurns.current.add(turnId);
      client.beta.agents.sessions.turns
        .retrieve(turnId, { session_id: sessionId })
        .then((turn) => dispatch({ type: "turn", turn }))
        .catch(() => requestedTurns.current.delete(turnId));
    },
    [client, sessionId],
  );

  const refreshGoal = useCallback(() => {
    getGoal(client, sessionId)
      .then((goal) => dispatch({ type: "goal", goal }))
      .catch((err: unknown) => setLoadError(errorMessage(err)));
  }, [client, sessionId]);

  return {
    timeline,
    connection,
    reconnects,
    hasOlder,
    loadingOlder,
    loadOlder,
    ensureTurn,
    refreshGoal,
    loadError,
  };
}
