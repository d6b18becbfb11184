-- 5: SQLite version 7: schedule times brought to whole Unix seconds up to the end of year 9999

  UPDATE automations SET run_at = GREATEST(0, LEAST(floor(run_at), 253402300799))
    WHERE run_at <> floor(run_at) OR run_at < 0 OR run_at > 253402300799;
  UPDATE automations SET next_run_at = GREATEST(0, LEAST(floor(next_run_at), 253402300799))
    WHERE next_run_at <> floor(next_run_at) OR next_run_at < 0 OR next_run_at > 253402300799;
  UPDATE automation_invocations SET scheduled_at = GREATEST(0, LEAST(floor(scheduled_at), 253402300799))
    WHERE scheduled_at <> floor(scheduled_at) OR scheduled_at < 0 OR scheduled_at > 253402300799;
