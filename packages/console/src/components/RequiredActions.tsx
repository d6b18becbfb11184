import { useState } from "react";
import { useApi } from "../api/context";
import { sendApproval, sendToolResult } from "../api/session-input";
import type { ApprovalAction, ApprovalDecision, FunctionCallAction, RequiredAction } from "../api/types";
import { useAction } from "../hooks/useAction";
import { ErrorLine } from "./ErrorLine";

const DECISION_LABEL: Record<ApprovalDecision, string> = {
  approve: "Approve",
  approve_for_session: "Approve for session",
  deny: "Deny",
  cancel: "Cancel turn",
};

/** The call's arguments, indented when they are JSON. */
const pretty = (args: unknown): string => {
  if (typeof args !== "string") return JSON.stringify(args, null, 2);
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
};

/** A function call of the agent's tools: the person (acting as the client) answers with the output or a failure. */
function FunctionCallCard(props: { sessionId: string; action: FunctionCallAction }) {
  const { client } = useApi();
  const { action } = props;
  const [output, setOutput] = useState("");
  const { busy, error, run: answer } = useAction();
  const send = (success: boolean) =>
    answer(() =>
      sendToolResult(
        client,
        props.sessionId,
        action,
        success ? { success: true, output } : { success: false, error: output || "Refused from the console" },
      ),
    );
  return (
    <form
      className="card action"
      aria-label={`tool call ${action.name}`}
      data-action-type="function_call"
      onSubmit={(e) => {
        e.preventDefault();
        void send(true);
      }}
    >
      <div className="who">
        Tool call <code>{action.name}</code> <span className="muted">{action.call_id}</span>
      </div>
      <pre className="args">{pretty(action.arguments)}</pre>
      <label>
        Result
        <textarea name="result" rows={2} value={output} onChange={(e) => setOutput(e.target.value)} />
      </label>
      <div className="row">
        <button type="submit" disabled={busy}>
          Send result
        </button>
        <button type="button" className="danger" disabled={busy} onClick={() => void send(false)}>
          Send failure
        </button>
      </div>
      <ErrorLine error={error} />
    </form>
  );
}

/** What an approval is about, beyond its message: the command, or the MCP tool and its arguments. */
function approvalSubject(action: ApprovalAction): string | null {
  const d = action.details ?? {};
  if (typeof d.command === "string") return d.command;
  if (typeof d.tool === "string") {
    const args = d.arguments === null || d.arguments === undefined ? "" : ` ${JSON.stringify(d.arguments)}`;
    return `${String(d.server_label ?? "")}.${d.tool}${args}`;
  }
  return null;
}

/** A command, file change or MCP request waiting for a decision. */
function ApprovalCard(props: { sessionId: string; action: ApprovalAction }) {
  const { client } = useApi();
  const { action } = props;
  const { busy, error, run: answer } = useAction();
  const found = approvalSubject(action);
  // The server's default message already names the command ("Run `…`"): no need to show it twice.
  const subject = found && !action.message?.includes(found) ? found : null;
  return (
    <fieldset
      className="card action"
      aria-label={`approval ${action.kind}`}
      data-action-type="approval_request"
    >
      <div className="who">
        Approval: <span>{action.kind.replace(/_/g, " ")}</span>
      </div>
      {action.message && <p>{action.message}</p>}
      {subject && <pre className="cmd">{subject}</pre>}
      <div className="row">
        {action.decisions.map((d) => (
          <button
            key={d}
            type="button"
            className={d === "deny" || d === "cancel" ? "danger" : undefined}
            disabled={busy}
            onClick={() => void answer(() => sendApproval(client, props.sessionId, action.action_id, d))}
          >
            {DECISION_LABEL[d] ?? d}
          </button>
        ))}
      </div>
      <ErrorLine error={error} />
    </fieldset>
  );
}

/** The session's required actions: what the running turn waits on until someone answers. */
export function RequiredActions(props: { sessionId: string; actions: RequiredAction[] }) {
  if (!props.actions.length) return null;
  return (
    <section className="required-actions" aria-label="required actions">
      <h3>Waiting for you</h3>
      {props.actions.map((a) =>
        a.type === "function_call" ? (
          <FunctionCallCard key={a.call_id} sessionId={props.sessionId} action={a} />
        ) : (
          <ApprovalCard key={a.action_id} sessionId={props.sessionId} action={a} />
        ),
      )}
    </section>
  );
}
