/**
 * The official OpenAI Agents API wire format (requests with `OpenAI-Beta: agents=v1`), as the `openai` npm SDK
 * 7.55.0 reads it: `agent.session` objects, cursor pages, `agent.session.turn.*` events with `event_id`.
 */
export * from "./render/events.js";
export * from "./render/items.js";
export * from "./render/objects.js";
