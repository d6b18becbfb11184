/**
 * The resume position of an event, for `Last-Event-ID`. The SDK's stream hands out parsed events but not the SSE
 * `id:` lines, so the position is read from the event's `event_id`, which this server builds from the same
 * numbers: `evt_<session>_<seq>_<frame>` (SSE id `<seq>:<frame>`) or `evt_<session>_<seq>_state` (SSE id
 * `<seq>`). Anything else gives null (the previous cursor stays).
 */
export function resumeCursor(eventId: string): string | null {
  const m = /_(\d+)_(\d+|state)$/.exec(eventId);
  if (!m) return null;
  return m[2] === "state" ? m[1]! : `${m[1]}:${m[2]}`;
}
