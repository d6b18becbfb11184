/**
 * The agent's `automations` tool as the engine shows it to the model (declared with the thread: engine/thread-options;
 * answered by this server: agent-tool.ts).
 */
import { AUTOMATIONS_TOOL_NAME } from "../../model/tools.js";

/** How the engine shows the tool to the model. */
export const AUTOMATIONS_TOOL_SPEC = {
  name: AUTOMATIONS_TOOL_NAME,
  description:
    "Schedule your own wake-ups in this session. action=create: at a time (run_at) or on a cron schedule " +
    "(expression, timezone), the instructions are sent to you as a message in this session. action=list: your " +
    "scheduled wake-ups. action=delete: cancel one (automation_id).",
  inputSchema: {
    type: "object",
    properties: {
      action: { type: "string", enum: ["create", "list", "delete"] },
      name: { type: "string", description: "create: a short name for the wake-up" },
      instructions: { type: "string", description: "create: the message you will get when it fires" },
      run_at: {
        type: "string",
        description: "create, once: an ISO 8601 date-time in the future, e.g. 2026-12-02T09:00:00Z",
      },
      expression: { type: "string", description: "create, repeating: a five-field cron expression" },
      timezone: {
        type: "string",
        description: "create, repeating: the IANA timezone of the expression (UTC)",
      },
      automation_id: { type: "string", description: "delete: the wake-up to cancel" },
    },
    required: ["action"],
    additionalProperties: false,
  },
};
