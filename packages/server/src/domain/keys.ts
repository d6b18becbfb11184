/**
 * API keys: each belongs to a project; a key sees only its project. Keys are `cas_<id>_<secret>`; only a salted
 * SHA-256 of the secret is stored (the secret is 256 random bits, so a fast hash is enough), compared in constant
 * time. The full key is shown once, when it is created.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../kernel/clock.js";
import { badRequest, notFound } from "../kernel/errors.js";
import type { Scope } from "../model/scope.js";
import type { KeyRecord, Store } from "../store/types.js";

const KEY = /^cas_([0-9a-f]{24})_([0-9a-f]{64})$/;
const PROJECT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export interface CreatedKey {
  id: string;
  project: string;
  admin: boolean;
  /** The secret key: shown once. */
  key: string;
  created_at: number;
}

export interface KeyInfo {
  id: string;
  project: string;
  admin: boolean;
  created_at: number;
  revoked_at: number | null;
}

const digest = (salt: string, secret: string) => createHash("sha256").update(salt).update(secret).digest();

export class KeyService {
  private readonly revokeListeners: Array<(id: string) => void> = [];

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** Called with the id of every key this process revokes (once it is stored). */
  onRevoke(listener: (id: string) => void): void {
    this.revokeListeners.push(listener);
  }

  async create(project: string, admin = false): Promise<CreatedKey> {
    if (!PROJECT.test(project)) {
      throw badRequest("project must be 1-64 characters: letters, digits, '_', '.', '-'", "project");
    }
    const id = randomBytes(12).toString("hex");
    const secret = randomBytes(32).toString("hex");
    const salt = randomBytes(16).toString("hex");
    const created_at = Math.floor(this.clock.now());
    const record: KeyRecord = {
      id: `key_${id}`,
      project_id: project,
      hash: digest(salt, secret).toString("hex"),
      salt,
      admin,
      created_at,
      revoked_at: null,
    };
    await this.store.insertKey(record);
    return { id: record.id, project, admin, key: `cas_${id}_${secret}`, created_at };
  }

  async list(): Promise<KeyInfo[]> {
    return (await this.store.listKeys()).map((k) => ({
      id: k.id,
      project: k.project_id,
      admin: k.admin,
      created_at: k.created_at,
      revoked_at: k.revoked_at,
    }));
  }

  async revoke(id: string): Promise<void> {
    if (!(await this.store.revokeKey(id, Math.floor(this.clock.now())))) {
      throw notFound(`Key ${id} not found (or already revoked)`, "id");
    }
    for (const l of this.revokeListeners) l(id);
  }

  /** Whether keys are in use: once one was made, every request needs an active one, even after all are revoked. */
  enabled(): Promise<boolean> {
    return this.store.hasKeys();
  }

  /** The scope of a presented key, or null when it is not an active key. */
  async authenticate(token: string): Promise<(Scope & { keyId: string }) | null> {
    const m = KEY.exec(token);
    if (!m) return null;
    const record = await this.store.getKey(`key_${m[1]}`);
    if (!record || record.revoked_at !== null) return null;
    const expected = Buffer.from(record.hash, "hex");
    const actual = digest(record.salt, m[2]!);
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    return { projectId: record.project_id, admin: record.admin, keyId: record.id };
  }
}
