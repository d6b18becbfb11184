import { useCallback, useState } from "react";
import { errorMessage } from "../api/client";

export interface Action {
  /** An action is running (buttons wait). */
  busy: boolean;
  /** What the last action's failure said (cleared when the next one starts). */
  error: string | null;
  setError(error: string | null): void;
  /** Runs `what`, one at a time from the caller's point of view, keeping its failure as `error`. */
  run(what: () => Promise<void>): Promise<void>;
}

/** The busy flag and error line of a form's or a panel's buttons. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async (what: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await what();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, setError, run };
}
