import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useLayoutEffect, useMemo, useRef } from "react";
import type { SessionTimeline } from "../hooks/useSessionTimeline";
import { rowsOf, type Row as TimelineRow } from "../state/timeline";
import { ItemView } from "./ItemView";
import { TurnHeader } from "./TurnHeader";

type Row = TimelineRow | { kind: "older"; key: string };

/** Within this many pixels of the end, the list follows new output. */
const STICK_PX = 48;

/** Whether a scrolled element shows its end (within STICK_PX). */
const atEndOf = (el: HTMLElement) => el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX;

/**
 * The session's rows, virtualised (only what is on screen is in the DOM, so a session of thousands of items
 * stays fast). It follows the end while the user is there, and loads older history at the top.
 */
export function Timeline(props: { state: SessionTimeline; showChanges?(turnId: string): void }) {
  const { timeline, hasOlder, loadingOlder, loadOlder, ensureTurn } = props.state;
  const rows = useMemo<Row[]>(
    () => (hasOlder ? [{ kind: "older", key: "older" }, ...rowsOf(timeline)] : rowsOf(timeline)),
    [timeline, hasOlder],
  );
  const scroller = useRef<HTMLDivElement>(null);
  const atEnd = useRef(true);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 72,
    overscan: 6,
    getItemKey: (i) => rows[i]?.key ?? i,
  });
  const items = virtualizer.getVirtualItems();

  // Older history went in front: keep the rows the user was looking at in place.
  const prepended = timeline.prepended;
  const rowCount = rows.length;
  const previousCount = useRef(0);
  useLayoutEffect(() => {
    const added = rowCount - previousCount.current;
    previousCount.current = rowCount;
    if (prepended > 0 && added > 0 && !atEnd.current) virtualizer.scrollToIndex(added, { align: "start" });
  }, [prepended, rowCount, virtualizer]);

  // Follow the end while new rows or output arrive (unless the user scrolled up).
  // biome-ignore lint/correctness/useExhaustiveDependencies: every timeline change may grow the last row
  useEffect(() => {
    if (atEnd.current && rowCount > 0) virtualizer.scrollToIndex(rowCount - 1, { align: "end" });
  }, [timeline, rowCount, virtualizer]);

  // A performance mark when the first rows are on screen (what the browser tests measure).
  const marked = useRef(false);
  useEffect(() => {
    if (marked.current || rowCount === 0) return;
    marked.current = true;
    performance.mark("console:timeline-rows");
  }, [rowCount]);

  // The top row is on screen: load the page before it. Whether the view is at the end is read from the element
  // here, not from the last scroll event: the virtualizer's own scroll listener may render this before onScroll has
  // run, and a jump from the end to the top would then be taken for "at the end" and never load (nothing changes
  // after it to run this again).
  const first = items[0]?.index;
  useEffect(() => {
    const el = scroller.current;
    if (first === 0 && hasOlder && !loadingOlder && el && !atEndOf(el)) loadOlder();
  }, [first, hasOlder, loadingOlder, loadOlder]);

  const onScroll = () => {
    const el = scroller.current;
    if (el) atEnd.current = atEndOf(el);
  };

  return (
    <div className="timeline" ref={scroller} onScroll={onScroll} data-testid="timeline">
      {rows.length === 0 && <p className="muted empty">Nothing yet: send a message below.</p>}
      <div className="timeline-inner" style={{ height: virtualizer.getTotalSize() }}>
        {items.map((v) => {
          const row = rows[v.index]!;
          return (
            <div
              key={v.key}
              data-index={v.index}
              ref={virtualizer.measureElement}
              className="row"
              style={{ transform: `translateY(${v.start}px)` }}
            >
              {row.kind === "older" ? (
                <button type="button" className="secondary older" disabled={loadingOlder} onClick={loadOlder}>
                  {loadingOlder ? "Loading…" : "Load older items"}
                </button>
              ) : row.kind === "turn" ? (
                <TurnHeader
                  turnId={row.turnId}
                  turn={timeline.turns.get(row.turnId)}
                  ensure={ensureTurn}
                  showChanges={props.showChanges}
                />
              ) : (
                <ItemView entry={timeline.entries.get(row.key)!} />
              )}
            </div>
          );
        })}
      </div>
    </div>
  );
}
