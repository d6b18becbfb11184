/**
 * Fan-out subscribers, in a worker thread so that reading their frames does not share an event loop with the mock
 * model (which lives on the bench's main thread). Opens `n` official session streams, reports "ready" once every
 * stream has delivered its opening state frame, then records (seq, epoch receive time) of every further frame until
 * each stream has seen `agent.session.turn.completed`.
 *
 * At 1000 streams the subscribers' own cost (node:http's response parsing, a frame object each) was larger than the
 * server's and, on a 2-core machine, showed up in the delays measured. So each subscriber is a plain TCP connection
 * that sends its GET and scans what arrives with SseLineScanner (ids and event names only): the server writes every
 * frame whole inside one HTTP chunk, so the chunk framing (size lines) falls between lines and is simply skipped.
 */
import { connect, type Socket } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import { SseLineScanner, seqOf } from "./http.js";
import { epochMs } from "./proc.js";

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

const COMPLETED = "agent.session.turn.completed";
const data = workerData as FanoutWorkerData;
const port = parentPort!;
const target = new URL(data.path, data.url);
const request =
  `GET ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${target.host}\r\naccept: text/event-stream\r\n` +
  Object.entries(data.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("") +
  "\r\n";
const seqs: number[] = [];
const times: number[] = [];
let completed = 0;
let finished = false;
let timer: NodeJS.Timeout | null = null;
const sockets: Socket[] = [];

function finish(error: string | null): void {
  if (finished) return;
  finished = true;
  if (timer) clearTimeout(timer);
  for (const s of sockets) s.destroy();
  const s = Float64Array.from(seqs);
  const t = Float64Array.from(times);
  const msg: FanoutMessage = { type: "done", seqs: s, times: t, completed, error };
  port.postMessage(msg, [s.buffer, t.buffer]);
}

/** One subscriber; resolves once its opening state frame has arrived. */
function subscribe(): Promise<void> {
  return new Promise((resolve, reject) => {
    let first = true;
    let done = false;
    /** Receive time of the chunk being scanned. */
    let at = 0;
    const scanner = new SseLineScanner((kind, value) => {
      if (done) return;
      if (kind === "id") {
        if (first) {
          first = false; // the opening state frame (agent.session.idle), sent before the turn
          resolve();
          return;
        }
        seqs.push(seqOf(value));
        times.push(at);
      } else if (value === COMPLETED && !first) {
        done = true;
        completed++;
        socket.destroy();
        if (completed === data.n) finish(null);
      }
    });
    let status = true;
    const socket = connect(Number(target.port), target.hostname, () => socket.write(request));
    socket.setEncoding("latin1"); // ids and event names are ASCII; the data lines are skipped
    socket.on("data", (chunk: string) => {
      if (status) {
        status = false;
        if (!chunk.startsWith("HTTP/1.1 200 ")) {
          reject(new Error(`GET ${data.path}: ${chunk.split("\r\n", 1)[0]}`));
          socket.destroy();
          return;
        }
      }
      at = epochMs();
      scanner.push(chunk);
    });
    socket.on("error", (err) => {
      if (first) reject(err);
      else if (!done) finish(`a stream failed: ${err.message}`);
    });
    socket.on("close", () => {
      if (first) reject(new Error(`GET ${data.path}: closed before its first frame`));
      else if (!done) finish("a stream ended before the turn completed");
    });
    sockets.push(socket);
  });
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const opened: Array<Promise<void>> = [];
  const deadline = setTimeout(() => finish("timed out connecting"), data.timeoutMs);
  for (let i = 0; i < data.n; i++) {
    opened.push(subscribe());
    // Connect in waves so the accept queue is not flooded.
    if (opened.length % 100 === 0) await Promise.all(opened.slice(-100));
  }
  await Promise.all(opened);
  clearTimeout(deadline);
  if (finished) return;
  port.postMessage({ type: "ready", connectMs: performance.now() - t0 } satisfies FanoutMessage);
  timer = setTimeout(
    () => finish(`timed out: ${completed}/${data.n} streams saw the turn complete`),
    data.timeoutMs,
  );
}

main().catch((err: unknown) => finish(String(err)));
