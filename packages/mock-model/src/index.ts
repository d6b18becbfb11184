export {
  CapturedRequest,
  type CapturedRequestInit,
  type FunctionCallItem,
  type FunctionCallOutput,
  type MessageRole,
  normaliseToolOutput,
} from "./request.js";
export { GOAL_PROMPT_PREFIX, type ScriptedModelOptions, scriptedModel } from "./scripted-model.js";
export {
  type Fallback,
  MockResponsesServer,
  type MockResponsesServerOptions,
  type Route,
  type WaitForRequestsOptions,
} from "./server.js";
export {
  ev,
  formatSse,
  formatSseEvent,
  Gate,
  type ResponseScript,
  type SseEvent,
  scripts,
  type Usage,
  usageToWire,
} from "./sse.js";
