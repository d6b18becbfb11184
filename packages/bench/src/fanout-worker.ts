/**
 * Fan-out subscribers, in a worker thread so that parsing their frames does not share an event loop with the mock
 * model (which lives on the bench's main thread). Opens `n` official session streams, reports "ready" once every
 * stream has delivered its opening state frame, then records (seq, epoch receive time) of every further frame until
 * each stream has seen `agent.session.turn.completed`.
 */
import { parentPort, workerData } from "node:worker_threads";
import { HttpClient, type SseStream, seqOf } from "./http.js";

export interface FanoutWorkerData {
  url: string;
  path: string;
  headers: Record<string, string>;
  n: number;
  timeoutMs: number;
}

export type FanoutMessage =
  | { type: "ready"; connectMs: number }
  | { type: "done"; seqs: Float64Array; times: Float64Array; completed: number; error: string | null };

const data = workerData as FanoutWorkerData;
const port = parentPort!;
const client = new HttpClient(data.url);
const seqs: number[] = [];
const times: number[] = [];
let completed = 0;
let finished = false;
let timer: NodeJS.Timeout | null = null;
const streams: SseStream[] = [];

function finish(error: string | null): void {
  if (finished) return;
  finished = true;
  if (timer) clearTimeout(timer);
  for (const s of streams) s.close();
  client.close();
  const s = Float64Array.from(seqs);
  const t = Float64Array.from(times);
  const msg: FanoutMessage = { type: "done", seqs: s, times: t, completed, error };
  port.postMessage(msg, [s.buffer, t.buffer]);
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const opened: Array<Promise<unknown>> = [];
  for (let i = 0; i < data.n; i++) {
    let first = true;
    let done = false;
    const stream = client.sse("GET", data.path, undefined, data.headers, (f) => {
      if (first) {
        first = false; // the opening state frame (agent.session.idle), sent before the turn
        return;
      }
      if (done) return;
      seqs.push(seqOf(f.id));
      times.push(f.epoch);
      if (f.event === "agent.session.turn.completed") {
        done = true;
        completed++;
        stream.close();
        if (completed === data.n) finish(null);
      }
    });
    streams.push(stream);
    opened.push(stream.next(() => true, data.timeoutMs));
    // Connect in waves so the accept queue is not flooded.
    if (opened.length % 100 === 0) await Promise.all(opened.slice(-100));
  }
  await Promise.all(opened);
  port.postMessage({ type: "ready", connectMs: performance.now() - t0 } satisfies FanoutMessage);
  timer = setTimeout(
    () => finish(`timed out: ${completed}/${data.n} streams saw the turn complete`),
    data.timeoutMs,
  );
}

main().catch((err: unknown) => finish(String(err)));
