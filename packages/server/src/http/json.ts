import { badRequest } from "../kernel/errors.js";

/**
 * How deep a request body may nest (`{"a":{"a":…}}`, `[[…]]`): far beyond any real body (a function tool's JSON
 * Schema included), and well within what handles a body. `JSON.parse` copes with any depth (slowly: 5 s for a
 * 10 MB body of brackets), but `JSON.stringify` (every stored JSON column), zod and other walkers are recursive,
 * and the engine's JSON-RPC parser stops at 128 levels: a deeper body would be a stack overflow (a 500) or a
 * request the engine refuses.
 */
export const MAX_BODY_DEPTH = 64;

/** Whether JSON text nests deeper than `max` (read from the text: before any time is spent parsing it). */
function nestsDeeper(text: string, max: number): boolean {
  // What decides nesting: brackets, and the quotes and escapes that put brackets inside strings.
  const re = /["\\[\]{}]/g;
  let depth = 0;
  let inString = false;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const c = m[0];
    if (inString) {
      if (c === "\\") re.lastIndex += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") {
      if (++depth > max) return true;
    } else if (c === "]" || c === "}") depth--;
  }
  return false;
}

/** A `\uD800`-`\uDFFF` escape in the raw text: the only way a parsed body can hold an unpaired surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when some string (value or key) of a parsed JSON value holds an unpaired UTF-16 surrogate. */
function hasLoneSurrogate(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (LONE_SURROGATE.test(v)) return true;
    } else if (Array.isArray(v)) {
      for (const child of v) stack.push(child);
    } else if (v && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        if (LONE_SURROGATE.test(k)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/** Request bodies: JSON (empty = {}), nested at most `MAX_BODY_DEPTH` levels, with well-formed strings only. */
export function parseJson(body: string): unknown {
  if (body.trim() === "") return {};
  if (nestsDeeper(body, MAX_BODY_DEPTH)) {
    throw badRequest(`Invalid JSON: the body nests more than ${MAX_BODY_DEPTH} levels deep`);
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    throw badRequest(`Invalid JSON: ${(err as Error).message}`);
  }
  // Such text is not Unicode: the engine cannot parse a request carrying it and never answers, so a turn
  // started with it would hang its session for good.
  if (SURROGATE_ESCAPE.test(body) && hasLoneSurrogate(value)) {
    throw badRequest("Invalid JSON: a string contains an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)");
  }
  return value;
}
