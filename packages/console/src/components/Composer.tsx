import { type FormEvent, type KeyboardEvent, useState } from "react";
import { useApi } from "../api/context";
import { cancelTurn, sendMessage } from "../api/session-input";
import type { GoalCaps } from "../api/types";
import { useAction } from "../hooks/useAction";
import { ErrorLine } from "./ErrorLine";

const positive = (s: string): number | undefined => {
  const n = Number(s);
  return s.trim() && Number.isInteger(n) && n > 0 ? n : undefined;
};

/**
 * Sends a message (a new turn when idle; while a turn runs the same message steers it), cancels the running
 * turn (also one waiting on a required action), or starts a goal whose objective is the message.
 */
export function Composer(props: { sessionId: string; running: boolean; waiting?: boolean }) {
  const { client } = useApi();
  const [text, setText] = useState("");
  const [asGoal, setAsGoal] = useState(false);
  const [maxTurns, setMaxTurns] = useState("");
  const [tokenBudget, setTokenBudget] = useState("");
  const [maxMinutes, setMaxMinutes] = useState("");
  const { busy, error, run: act } = useAction();

  const goalCaps = (): GoalCaps | true => {
    const caps: GoalCaps = {};
    const turns = positive(maxTurns);
    const tokens = positive(tokenBudget);
    const minutes = positive(maxMinutes);
    if (turns) caps.max_turns = turns;
    if (tokens) caps.token_budget = tokens;
    if (minutes) caps.max_duration_seconds = minutes * 60;
    return Object.keys(caps).length ? caps : true;
  };

  const send = () => {
    const message = text.trim();
    if (!message) return;
    void act(async () => {
      const goal = asGoal && !props.running ? goalCaps() : undefined;
      await sendMessage(client, props.sessionId, message, goal);
      setText("");
      if (goal) setAsGoal(false);
    });
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    send();
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send();
  };

  return (
    <form className="composer" onSubmit={submit} aria-label="composer">
      <textarea
        name="message"
        aria-label="Message"
        rows={3}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKey}
        placeholder={props.running ? "Steer the running turn…" : "Message the agent (Ctrl+Enter sends)"}
      />
      <div className="composer-actions">
        <label className="check">
          <input
            type="checkbox"
            name="as-goal"
            checked={asGoal}
            disabled={props.running}
            onChange={(e) => setAsGoal(e.target.checked)}
          />
          Start as a goal
        </label>
        {asGoal && !props.running && (
          <>
            <label>
              Max turns
              <input
                name="max-turns"
                inputMode="numeric"
                value={maxTurns}
                onChange={(e) => setMaxTurns(e.target.value)}
              />
            </label>
            <label>
              Token budget
              <input
                name="token-budget"
                inputMode="numeric"
                value={tokenBudget}
                onChange={(e) => setTokenBudget(e.target.value)}
              />
            </label>
            <label>
              Max minutes
              <input
                name="max-minutes"
                inputMode="numeric"
                value={maxMinutes}
                onChange={(e) => setMaxMinutes(e.target.value)}
              />
            </label>
          </>
        )}
        <span className="spacer" />
        <button type="submit" disabled={busy || !text.trim()}>
          {props.running ? "Steer" : asGoal ? "Start goal" : "Send"}
        </button>
        <button
          type="button"
          className="danger"
          disabled={busy || !(props.running || props.waiting)}
          onClick={() => act(() => cancelTurn(client, props.sessionId))}
        >
          Cancel turn
        </button>
      </div>
      <ErrorLine error={error} />
    </form>
  );
}
