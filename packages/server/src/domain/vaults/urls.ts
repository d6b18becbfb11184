/** The URLs vault credentials name: checked when saved, normalised so that credentials match MCP servers. */
import { isLoopback } from "../../config/load.js";
import { badRequest } from "../../kernel/errors.js";

/**
 * An https URL (or http on a loopback address: a local MCP server or token endpoint), without credentials or a
 * fragment.
 */
export function checkCredentialUrl(raw: string, where: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest(`'${where}' is not a URL`, where);
  }
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if (u.protocol !== "https:" && !(u.protocol === "http:" && isLoopback(host))) {
    throw badRequest(`'${where}' must be an https URL (http only on a loopback address)`, where);
  }
  if (u.username || u.password) throw badRequest(`'${where}' cannot carry a user name or password`, where);
  if (u.hash) throw badRequest(`'${where}' cannot have a fragment`, where);
  return u;
}

/**
 * The form credentials and MCP servers are matched in: scheme and host in lower case, no default port, no trailing
 * slash on the path, the query kept. `null` when the text is not a URL.
 */
export function normaliseServerUrl(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  const path = u.pathname.replace(/\/+$/, "");
  return `${u.protocol}//${u.host}${path}${u.search}`;
}
