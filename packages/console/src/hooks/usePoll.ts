import { useCallback, useEffect, useRef, useState } from "react";
import { errorMessage } from "../api/client";

export interface Poll<T> {
  data: T | undefined;
  error: string | null;
  refresh(): void;
}

/** Calls `load` now and every `intervalMs` (after the previous call ended) while mounted; `key` restarts it. */
export function usePoll<T>(
  load: (signal: AbortSignal) => Promise<T>,
  intervalMs: number,
  key: string,
): Poll<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` and `tick` restart the poll on purpose
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const once = async () => {
      try {
        const value = await loadRef.current(abort.signal);
        if (abort.signal.aborted) return;
        setData(value);
        setError(null);
      } catch (err) {
        if (abort.signal.aborted) return;
        setError(errorMessage(err));
      }
      timer = setTimeout(once, intervalMs);
    };
    void once();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [intervalMs, key, tick]);

  const refresh = useCallback(() => setTick((n) => n + 1), []);
  return { data, error, refresh };
}
