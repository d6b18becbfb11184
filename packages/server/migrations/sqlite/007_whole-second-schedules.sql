-- 7: schedule times are whole Unix seconds up to the end of year 9999 (kernel/unix-seconds.ts; the stores now
-- refuse anything else): times stored before, a client's fractional or huge run_at, are brought in range

  UPDATE automations SET run_at = MAX(0, MIN(CAST(run_at AS INTEGER), 253402300799))
    WHERE run_at IS NOT NULL AND (run_at <> CAST(run_at AS INTEGER) OR run_at < 0 OR run_at > 253402300799);
  UPDATE automations SET next_run_at = MAX(0, MIN(CAST(next_run_at AS INTEGER), 253402300799))
    WHERE next_run_at IS NOT NULL
      AND (next_run_at <> CAST(next_run_at AS INTEGER) OR next_run_at < 0 OR next_run_at > 253402300799);
  UPDATE automation_invocations SET scheduled_at = MAX(0, MIN(CAST(scheduled_at AS INTEGER), 253402300799))
    WHERE scheduled_at IS NOT NULL
      AND (scheduled_at <> CAST(scheduled_at AS INTEGER) OR scheduled_at < 0 OR scheduled_at > 253402300799);
