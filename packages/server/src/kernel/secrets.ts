/**
 * Secrets at rest (webhook signing secrets): sealed with AES-256-GCM under the service's secret key, bound to what
 * they belong to (the additional authenticated data: a sealed value copied to another row does not open). A sealed
 * value names its key (the first bytes of the key's SHA-256), so a value sealed under another key is reported as
 * such instead of as corrupt.
 *
 * The key: `AGENT_SECRET_KEY` (32 bytes, base64 or hex), or a file holding it (`--secret-key-file`), or else one the
 * service generates on first use into `<data-dir>/secret.key` (mode 0600). Instances sharing a PostgreSQL database
 * must share the key. The key and the secrets are never logged.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";

export class SecretKeyError extends Error {}

const VERSION = "v1";
const KEY_BYTES = 32;
const IV_BYTES = 12;

/** 32 bytes from base64 (standard or url-safe) or hex text, or raw bytes. */
export function parseSecretKey(raw: string | Buffer, where: string): Buffer {
  if (Buffer.isBuffer(raw) && raw.length === KEY_BYTES) return Buffer.from(raw);
  const text = raw.toString().trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const bytes = Buffer.from(text, text.includes("-") || text.includes("_") ? "base64url" : "base64");
    if (bytes.length === KEY_BYTES) return bytes;
  }
  throw new SecretKeyError(
    `${where} must hold a 32-byte key as base64 or hex (generate one with: openssl rand -base64 32)`,
  );
}

export interface SecretKeySource {
  /** The key itself (AGENT_SECRET_KEY). */
  key?: string | null;
  /** A file holding it (--secret-key-file). */
  keyFile?: string | null;
  /** Where a key is generated when neither is given. */
  dataDir: string;
}

export interface LoadedKey {
  key: Buffer;
  /** Where it came from (never the key). */
  origin: "env" | "file" | "data-dir" | "generated";
  path: string | null;
  /** A readable key file whose permissions let others read it. */
  warning: string | null;
}

/** Reads (or, with neither a key nor a file, creates) the service's secret key. */
export function loadSecretKey(src: SecretKeySource): LoadedKey {
  if (src.key)
    return { key: parseSecretKey(src.key, "AGENT_SECRET_KEY"), origin: "env", path: null, warning: null };
  const explicit = src.keyFile ?? null;
  const path = explicit ?? join(src.dataDir, "secret.key");
  let generated = false;
  if (!explicit) {
    try {
      // Exclusive creation: of two processes starting at once on the same data dir, one writes, both read it.
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, `${randomBytes(KEY_BYTES).toString("base64")}\n`);
      } finally {
        closeSync(fd);
      }
      generated = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (err) {
    throw new SecretKeyError(`cannot read the secret key file ${path}: ${(err as Error).message}`);
  }
  const mode = statSync(path).mode & 0o777;
  return {
    key: parseSecretKey(content, explicit ? "--secret-key-file" : path),
    origin: explicit ? "file" : generated ? "generated" : "data-dir",
    path,
    warning:
      mode & 0o077 ? `the secret key file ${path} is readable by others (mode ${mode.toString(8)})` : null,
  };
}

/** Seals and opens secrets with one key; `context` names what a secret belongs to (e.g. the endpoint id). */
export class SecretBox {
  private readonly key: Buffer;
  /** Names the key in sealed values (not secret: 8 hex characters of the key's SHA-256). */
  readonly keyId: string;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new SecretKeyError("the secret key must be 32 bytes");
    this.key = Buffer.from(key);
    this.keyId = createHash("sha256").update(this.key).digest("hex").slice(0, 8);
  }

  /** `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts). */
  seal(plain: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [
      VERSION,
      this.keyId,
      iv.toString("base64url"),
      tag.toString("base64url"),
      ct.toString("base64url"),
    ].join(".");
  }

  open(sealed: string, context: string): string {
    const parts = sealed.split(".");
    if (parts.length !== 5 || parts[0] !== VERSION) throw new SecretKeyError("not a sealed secret");
    const [, keyId, iv, tag, ct] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) {
      throw new SecretKeyError(
        `this secret was sealed with another key (${keyId}; this instance has ${this.keyId}): every instance ` +
          "must have the same AGENT_SECRET_KEY",
      );
    }
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(ct, "base64url")), decipher.final()]).toString(
        "utf8",
      );
    } catch {
      throw new SecretKeyError("a sealed secret failed its integrity check");
    }
  }
}

/** A SecretBox whose key is loaded on first use (a service that never seals anything never creates a key file). */
export class LazySecretBox {
  private box: SecretBox | null = null;

  constructor(
    private readonly load: () => LoadedKey,
    private readonly onLoad: (k: Omit<LoadedKey, "key">) => void = () => undefined,
  ) {}

  private get(): SecretBox {
    if (!this.box) {
      const { key, ...about } = this.load();
      this.box = new SecretBox(key);
      this.onLoad(about);
    }
    return this.box;
  }

  get keyId(): string {
    return this.get().keyId;
  }

  seal(plain: string, context: string): string {
    return this.get().seal(plain, context);
  }

  open(sealed: string, context: string): string {
    return this.get().open(sealed, context);
  }
}

/**
 * Several keys for rotation: the current key seals, any key of the ring opens what it sealed (a sealed value names
 * its key). Rotating: make a new key the current one and keep the old ones as previous keys; values sealed with them
 * still open, and `reseal` moves each to the current key (the service does it at start-up); once none is left the
 * old keys can go.
 */
export class SecretKeyring {
  private readonly current: SecretBox;
  private readonly byId = new Map<string, SecretBox>();

  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    this.current = new SecretBox(current);
    this.byId.set(this.current.keyId, this.current);
    for (const key of previous) {
      const box = new SecretBox(key);
      if (!this.byId.has(box.keyId)) this.byId.set(box.keyId, box);
    }
  }

  /** The current key's id. */
  get keyId(): string {
    return this.current.keyId;
  }

  /** How every value sealed with the current key starts. */
  get currentPrefix(): string {
    return `${VERSION}.${this.current.keyId}.`;
  }

  /** The ids of every key of the ring, the current one first. */
  get keyIds(): string[] {
    return [...this.byId.keys()];
  }

  seal(plain: string, context: string): string {
    return this.current.seal(plain, context);
  }

  open(sealed: string, context: string): string {
    const keyId = sealed.split(".")[1] ?? "";
    const box = this.byId.get(keyId);
    if (!box) {
      throw new SecretKeyError(
        `this secret was sealed with a key this instance does not have (${keyId}; it has ${this.keyIds.join(", ")}): ` +
          "keep the old key among the previous keys (AGENT_SECRET_KEYS_PREVIOUS) until its values are re-sealed",
      );
    }
    return box.open(sealed, context);
  }

  /** Whether a sealed value was sealed with another key than the current one. */
  isStale(sealed: string): boolean {
    return !sealed.startsWith(this.currentPrefix);
  }

  /** The value sealed again with the current key (it must open with a key of the ring). */
  reseal(sealed: string, context: string): string {
    return this.isStale(sealed) ? this.seal(this.open(sealed, context), context) : sealed;
  }
}

/** Keys separated by commas or whitespace (each 32 bytes as base64 or hex); empty: none. */
export function parseSecretKeyList(raw: string, where: string): Buffer[] {
  return raw
    .split(/[\s,]+/)
    .filter((k) => k !== "")
    .map((k, i) => parseSecretKey(k, `${where} (key ${i + 1})`));
}

export interface KeyringSource extends SecretKeySource {
  /** Previous keys (AGENT_SECRET_KEYS_PREVIOUS), and/or a file holding them one per line. */
  previousKeys?: string | null;
  previousKeysFile?: string | null;
}

/** The current key (as {@link loadSecretKey} finds or makes it) and the previous ones. */
export function loadSecretKeyring(src: KeyringSource): LoadedKey & { previous: Buffer[] } {
  const current = loadSecretKey(src);
  const previous = src.previousKeys ? parseSecretKeyList(src.previousKeys, "AGENT_SECRET_KEYS_PREVIOUS") : [];
  if (src.previousKeysFile) {
    let content: string;
    try {
      content = readFileSync(src.previousKeysFile, "utf8");
    } catch (err) {
      throw new SecretKeyError(
        `cannot read the previous keys file ${src.previousKeysFile}: ${(err as Error).message}`,
      );
    }
    previous.push(...parseSecretKeyList(content, src.previousKeysFile));
  }
  return { ...current, previous };
}

/** A SecretKeyring whose keys are loaded on first use. */
export class LazySecretKeyring {
  private ring: SecretKeyring | null = null;

  constructor(
    private readonly load: () => LoadedKey & { previous: Buffer[] },
    private readonly onLoad: (k: Omit<LoadedKey, "key">) => void = () => undefined,
  ) {}

  private get(): SecretKeyring {
    if (!this.ring) {
      const { key, previous, ...about } = this.load();
      this.ring = new SecretKeyring(key, previous);
      this.onLoad(about);
    }
    return this.ring;
  }

  get keyId(): string {
    return this.get().keyId;
  }

  get currentPrefix(): string {
    return this.get().currentPrefix;
  }

  seal(plain: string, context: string): string {
    return this.get().seal(plain, context);
  }

  open(sealed: string, context: string): string {
    return this.get().open(sealed, context);
  }

  isStale(sealed: string): boolean {
    return this.get().isStale(sealed);
  }

  reseal(sealed: string, context: string): string {
    return this.get().reseal(sealed, context);
  }
}
