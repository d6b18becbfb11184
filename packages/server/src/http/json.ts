import { badRequest } from "../domain/errors.js";

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

/** Request bodies: JSON (empty = {}), with well-formed strings only. */
export function parseJson(body: string): unknown {
  if (body.trim() === "") return {};
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
