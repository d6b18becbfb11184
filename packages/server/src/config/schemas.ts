/**
 * The zod schemas option rows parse their text with. An issue's message is what follows the option's name in the
 * error ("--port" + " must be an integer between 0 and 65535, got \"x\"").
 */
import { isIP } from "node:net";
import { z } from "zod";

/** A refusal: what follows the option's name in the error. */
class Refusal {
  constructor(readonly message: string) {}
}
const refuse = (message: string) => new Refusal(message);

function checked<T>(check: (raw: string) => T | Refusal): z.ZodType<T, string> {
  return z.string().transform((raw, ctx) => {
    const r = check(raw);
    if (!(r instanceof Refusal)) return r;
    ctx.issues.push({ code: "custom", message: r.message, input: raw });
    return z.NEVER;
  });
}

const isUrl = (raw: string): URL | null => {
  try {
    return new URL(raw);
  } catch {
    return null;
  }
};

/** Any text, as given. */
export const text: z.ZodType<string, string> = z.string();

/** An integer as `Number()` reads it (so " 0x10 " is 16), within bounds. */
export function int(bounds: { min?: number; max?: number; times?: number } = {}): z.ZodType<number, string> {
  const { min = 0, max = Number.MAX_SAFE_INTEGER, times = 1 } = bounds;
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
  return checked((raw) => {
    const n = Number(raw);
    return Number.isInteger(n) && n >= min && n <= max
      ? n * times
      : refuse(`must be an integer ${range}, got "${raw}"`);
  });
}

/** One of the words; `said` is how the error lists them ("auto, session or shared"). */
export function oneOf<const W extends string>(words: readonly W[], said: string): z.ZodType<W, string> {
  return checked((raw) =>
    (words as readonly string[]).includes(raw) ? (raw as W) : refuse(`must be ${said}, got "${raw}"`),
  );
}

/** on/off (also 1/0, true/false), in any case. */
export const onOff: z.ZodType<boolean, string> = checked((raw) => {
  const v = raw.toLowerCase();
  if (v === "on" || v === "1" || v === "true") return true;
  if (v === "off" || v === "0" || v === "false") return false;
  return refuse(`must be on or off, got "${v}"`);
});

/** Any URL `new URL()` takes, kept as written. */
export const url: z.ZodType<string, string> = checked((raw) =>
  isUrl(raw) ? raw : refuse(`takes a URL, got "${raw}"`),
);

/** A postgres:// or postgresql:// URL, kept as written. */
export const postgresUrl: z.ZodType<string, string> = checked((raw) => {
  const u = isUrl(raw);
  return u && (u.protocol === "postgres:" || u.protocol === "postgresql:")
    ? raw
    : refuse("takes a PostgreSQL URL like postgres://user@host:5432/db");
});

/** A Host header name without scheme or port (lower-cased): a name, an IPv4 address or a bracketed IPv6 one. */
export const hostName: z.ZodType<string, string> = checked((raw) => {
  const h = raw.toLowerCase();
  return /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$/.test(h)
    ? h
    : refuse(`takes a host name without scheme or port, got "${h}"`);
});

/** A browser origin, exactly as `URL.origin` spells it. */
export const origin: z.ZodType<string, string> = checked((raw) =>
  isUrl(raw)?.origin === raw ? raw : refuse(`takes an origin like https://console.example.com, got "${raw}"`),
);

/** A gitignore pattern: one line. */
export const gitignorePattern: z.ZodType<string, string> = checked((raw) =>
  /[\r\n\0]/.test(raw) ? refuse(`takes one pattern per line, got ${JSON.stringify(raw)}`) : raw,
);

/** An IPv4 or IPv6 range in CIDR notation (a bare address is that one address). */
export const cidr: z.ZodType<string, string> = checked((raw) => {
  const m = /^([0-9a-fA-F:.]+)(?:\/(\d{1,3}))?$/.exec(raw.trim());
  if (!m || isIP(m[1]!) === 0) return refuse(`takes an address range like 10.1.2.0/24, got "${raw}"`);
  const bits = m[2] === undefined ? (isIP(m[1]!) === 4 ? 32 : 128) : Number(m[2]);
  if (bits > (isIP(m[1]!) === 4 ? 32 : 128))
    return refuse(`has a prefix too long for its address, got "${raw}"`);
  return `${m[1]}/${bits}`;
});

/** `name=address`: a host name the egress proxy resolves to a fixed address. */
export const hostAddress: z.ZodType<[string, string], string> = checked((raw) => {
  const m = /^([a-zA-Z0-9.-]+)=([0-9a-fA-F:.]+)$/.exec(raw.trim());
  if (!m || isIP(m[2]!) === 0)
    return refuse(`takes name=address like mirror.internal=10.1.2.3, got "${raw}"`);
  return [m[1]!.toLowerCase(), m[2]!] as [string, string];
});
