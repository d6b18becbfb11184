/**
 * Secrets by placeholder (the official `environment_variable` vault credential): the sandbox only ever holds a
 * placeholder; in the requests the proxy sees in clear (plain HTTP forward requests, HTTPS it terminates) the
 * placeholder is replaced by the secret in the request target (path and query) and in header values, towards the
 * hosts the substitution names. Bodies are not rewritten. Validated and compiled once, on open and on update.
 */
import { createHash } from "node:crypto";
import type { TargetHost } from "./hosts.js";
import { Patterns } from "./policy.js";

export interface EgressSubstitution {
  /** What the sandbox sees instead of the secret (see `placeholderFor`): 16–256 of `A-Z a-z 0-9 - . _ ~`. */
  placeholder: string;
  /** The secret: non-empty, at most 16 384 characters, no control characters but tab. Never logged. */
  value: string;
  /** Host patterns (the policy's syntax) whose requests get the value, or "any" (every host the policy allows). */
  hosts: string[] | "any";
}

/** Characters a placeholder is made of: unreserved in URLs (RFC 3986) and valid in a header token. */
const PLACEHOLDER = /^[A-Za-z0-9._~-]{16,256}$/;
const MAX_VALUE = 16_384;
/** C0 controls but tab, and DEL: never valid in a header value (and CR, LF, NUL are what the official API forbids). */
const hasControl = (v: string): boolean => {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
};
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * The placeholder a sandbox gets for a credential's secret: `cas-secret-<secretName>-<32 hex>`, the hex being a
 * SHA-256 of the credential id and the name. Stable (the same credential always gets the same placeholder, across
 * restarts and rotations of its value), distinct per credential, derived from no secret (it reveals nothing about the
 * value) and not a secret itself: it is only ever replaced by the endpoint of the sandbox it was given to. Made of
 * URL-unreserved characters, so it stands unchanged in a header, a path or a query.
 */
export function placeholderFor(secretName: string, credentialId: string): string {
  if (typeof secretName !== "string" || !SECRET_NAME.test(secretName)) {
    throw new TypeError(
      "secretName must be 1-128 ASCII letters, digits and underscores, not starting with a digit",
    );
  }
  if (typeof credentialId !== "string" || credentialId === "") {
    throw new TypeError("credentialId must be a non-empty string");
  }
  const digest = createHash("sha256")
    .update(`codex-agent-api egress placeholder\0${credentialId}\0${secretName}`)
    .digest("hex");
  return `cas-secret-${secretName}-${digest.slice(0, 32)}`;
}

/** RFC 3986 unreserved characters stay, every other UTF-8 byte is percent-encoded. */
const encodeForUrl = (value: string): string =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** A header value as Node writes it (latin1, one byte per character): the value's UTF-8 bytes. */
const headerForm = (value: string): string => Buffer.from(value, "utf8").toString("latin1");

interface Entry {
  placeholder: string;
  headerValue: string;
  urlValue: string;
  hosts: Patterns | "any";
}

const escapeRegExp = (s: string) => s.replace(/[.\\^$*+?()[\]{}|]/g, "\\$&");

/** Replaces the placeholders that apply to one request's host. */
export class Substituter {
  /** How many placeholders were replaced so far. */
  count = 0;
  private readonly byPlaceholder: ReadonlyMap<string, Entry>;
  private readonly pattern: RegExp;

  constructor(entries: readonly Entry[]) {
    this.byPlaceholder = new Map(entries.map((e) => [e.placeholder, e]));
    // No placeholder contains another (checked on compile): the alternation's order does not matter.
    this.pattern = new RegExp(entries.map((e) => escapeRegExp(e.placeholder)).join("|"), "g");
  }

  /** A header value with its placeholders replaced by the values (their UTF-8 bytes). */
  header(value: string): string {
    return this.replace(value, "headerValue");
  }

  /** A request target (path and query) with its placeholders replaced by the percent-encoded values. */
  requestTarget(path: string): string {
    return this.replace(path, "urlValue");
  }

  private replace(text: string, form: "headerValue" | "urlValue"): string {
    // One pass: a value that happens to contain a placeholder is not substituted again.
    return text.replace(this.pattern, (p) => {
      this.count++;
      return this.byPlaceholder.get(p)![form];
    });
  }
}

export class CompiledSubstitutions {
  private readonly entries: readonly Entry[];
  /** Whether one of them applies to every host the policy allows. */
  readonly anyHost: boolean;
  /** To conceal values in response headers: each value's forms and its placeholder, longest first. */
  private readonly concealed: ReadonlyArray<[string, string]>;

  constructor(substitutions: readonly EgressSubstitution[]) {
    if (!Array.isArray(substitutions)) throw new TypeError("substitutions must be an array");
    this.entries = substitutions.map((s, i): Entry => {
      const what = `substitutions[${i}]`;
      if (typeof s !== "object" || s === null)
        throw new TypeError(`${what} must be { placeholder, value, hosts }`);
      if (typeof s.placeholder !== "string" || !PLACEHOLDER.test(s.placeholder)) {
        throw new TypeError(`${what}.placeholder must be 16-256 of the characters A-Z a-z 0-9 - . _ ~`);
      }
      // (The value is a secret: never in a message.)
      if (
        typeof s.value !== "string" ||
        s.value === "" ||
        s.value.length > MAX_VALUE ||
        hasControl(s.value)
      ) {
        throw new TypeError(
          `${what}.value must be a non-empty string of at most ${MAX_VALUE} characters without control characters (tab aside)`,
        );
      }
      let hosts: Patterns | "any";
      if (s.hosts === "any") hosts = "any";
      else if (Array.isArray(s.hosts) && s.hosts.length > 0) hosts = new Patterns(s.hosts, `${what}.hosts`);
      else throw new TypeError(`${what}.hosts must be "any" or a non-empty array of host names`);
      return {
        placeholder: s.placeholder,
        headerValue: headerForm(s.value),
        urlValue: encodeForUrl(s.value),
        hosts,
      };
    });
    for (const a of this.entries) {
      for (const b of this.entries) {
        if (a !== b && b.placeholder.includes(a.placeholder)) {
          throw new TypeError(
            a.placeholder === b.placeholder
              ? `the placeholder ${a.placeholder} is given twice`
              : `the placeholder ${b.placeholder} contains another one (${a.placeholder})`,
          );
        }
      }
    }
    this.anyHost = this.entries.some((e) => e.hosts === "any");
    const forms = this.entries.flatMap(
      (e): Array<[string, string]> => [
        [e.headerValue, e.placeholder],
        [e.urlValue, e.placeholder],
      ],
    );
    // Very short values would match unrelated text: not concealed (a secret that short is no secret).
    this.concealed = forms.filter(([v]) => v.length >= 4).sort((a, b) => b[0].length - a[0].length);
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Whether a substitution may apply to this host (its HTTPS is then intercepted). */
  appliesTo(t: TargetHost): boolean {
    return this.entries.some((e) => e.hosts === "any" || e.hosts.matches(t));
  }

  /** The substitutions for a host's requests (null: none apply). */
  for(t: TargetHost): Substituter | null {
    const applying = this.entries.filter((e) => e.hosts === "any" || e.hosts.matches(t));
    return applying.length === 0 ? null : new Substituter(applying);
  }

  /** A response header value with every substituted value (as sent in a header or a URL) put back as its placeholder. */
  conceal(headerValue: string): string {
    let out = headerValue;
    for (const [v, placeholder] of this.concealed) if (out.includes(v)) out = out.split(v).join(placeholder);
    return out;
  }
}
