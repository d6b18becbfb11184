export {
  CapturedRequest,
  type CapturedRequestInit,
  type FunctionCallItem,
  type FunctionCallOutput,
  type MessageRole,
  normaliseToolOutput,
} from "./request.js";
export {
  GOAL_PROMPT_PREFIX,
  MULTI_AGENT_NAMESPACE,
  mcpNamespace,
  type ScriptedModelOptions,
  SUBAGENT_NOTIFICATION_PREFIX,
  scriptedModel,
  toolOutputText,
} from "./scripted-model.js";
export {
  type Fallback,
  MockResponsesServer,
  type MockResponsesServerOptions,
  type Route,
  type WaitForRequestsOptions,
} from "./server.js";
export {
  ev,
  type FunctionCallSpec,
  formatSse,
  formatSseEvent,
  Gate,
  type ResponseScript,
  type SseEvent,
  scripts,
  type Usage,
  usageToWire,
} from "./sse.js";
