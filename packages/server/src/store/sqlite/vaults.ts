/** Vaults and their credentials; sealed values of every kind (for key rotation). */
import type { Queries, SealedKind, VaultCredentialRecord, VaultListOptions, VaultRecord } from "../types.js";
import { asIs, json, listByCreated, parse, type SqliteDb, setClause } from "./db.js";

interface VaultRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  metadata: string;
  status: string;
}

const VAULT_COLS = "id, project_id, created_at, updated_at, name, metadata, status";

const vaultFromRow = (r: VaultRow): VaultRecord => ({
  id: r.id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  name: r.name,
  metadata: parse(r.metadata),
  status: r.status as VaultRecord["status"],
});

interface CredentialRow {
  id: string;
  vault_id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string;
  metadata: string;
  status: string;
  auth: string;
  secret: string;
  server_url: string | null;
}

const CRED_COLS =
  "id, vault_id, project_id, created_at, updated_at, name, metadata, status, auth, secret, server_url";

const credFromRow = (r: CredentialRow): VaultCredentialRecord => ({
  id: r.id,
  vault_id: r.vault_id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  name: r.name,
  metadata: parse(r.metadata),
  status: r.status as VaultCredentialRecord["status"],
  auth: parse(r.auth),
  secret: r.secret,
  server_url: r.server_url,
});

const VAULT_ENCODE = { updated_at: asIs, name: asIs, metadata: json, status: asIs };
const CRED_ENCODE = { updated_at: asIs, name: asIs, metadata: json, status: asIs, auth: json, secret: asIs };

/** The table and column of each kind of sealed value. */
const SEALED: Record<SealedKind, { table: string; column: string }> = {
  environment: { table: "environments", column: "secrets" },
  environment_template: { table: "environment_templates", column: "secrets" },
  vault_credential: { table: "vault_credentials", column: "secret" },
};

/** `metadata[k] = v` for every pair, and status among the given ones. */
function filters(table: string, opts: VaultListOptions): { where: string[]; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  for (const [k, v] of Object.entries(opts.metadata ?? {})) {
    where.push(`EXISTS (SELECT 1 FROM json_each(${table}.metadata) AS m WHERE m.key = ? AND m.value = ?)`);
    params.push(k, v);
  }
  if (opts.status && opts.status.length > 0) {
    where.push(`status IN (${opts.status.map(() => "?").join(", ")})`);
    params.push(...opts.status);
  }
  return { where, params };
}

export type VaultQueries = Pick<
  Queries,
  | "insertVault"
  | "getVault"
  | "updateVault"
  | "deleteVault"
  | "listVaults"
  | "insertVaultCredential"
  | "getVaultCredential"
  | "updateVaultCredential"
  | "deleteVaultCredential"
  | "listVaultCredentials"
  | "credentialsOfVaults"
  | "listSealed"
  | "replaceSealed"
>;

export function vaultQueries(db: SqliteDb): VaultQueries {
  const getVault = (id: string) => {
    const row = db.get<VaultRow>(`SELECT ${VAULT_COLS} FROM vaults WHERE id = ?`, id);
    return row && vaultFromRow(row);
  };
  const getCred = (id: string) => {
    const row = db.get<CredentialRow>(`SELECT ${CRED_COLS} FROM vault_credentials WHERE id = ?`, id);
    return row && credFromRow(row);
  };
  return {
    async insertVault(v) {
      db.run(
        `INSERT INTO vaults (${VAULT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        v.id,
        v.project_id,
        v.created_at,
        v.updated_at,
        v.name,
        json(v.metadata),
        v.status,
      );
    },
    async getVault(id) {
      return getVault(id);
    },
    async updateVault(id, patch) {
      const set = setClause(patch, VAULT_ENCODE);
      if (set.params.length > 0) db.run(`UPDATE vaults SET ${set.sql} WHERE id = ?`, ...set.params, id);
      return getVault(id);
    },
    async deleteVault(id) {
      // The credentials go with it (ON DELETE CASCADE).
      return db.run("DELETE FROM vaults WHERE id = ?", id).changes > 0;
    },
    async listVaults(opts) {
      const f = filters("vaults", opts);
      return listByCreated(db, {
        table: "vaults",
        cols: VAULT_COLS,
        where: ["project_id = ?", ...f.where],
        params: [opts.project_id, ...f.params],
        opts,
        map: vaultFromRow,
      });
    },
    async insertVaultCredential(c) {
      db.run(
        `INSERT INTO vault_credentials (${CRED_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        c.id,
        c.vault_id,
        c.project_id,
        c.created_at,
        c.updated_at,
        c.name,
        json(c.metadata),
        c.status,
        json(c.auth),
        c.secret,
        c.server_url,
      );
    },
    async getVaultCredential(id) {
      return getCred(id);
    },
    async updateVaultCredential(id, patch) {
      const set = setClause(patch, CRED_ENCODE);
      if (set.params.length > 0) {
        db.run(`UPDATE vault_credentials SET ${set.sql} WHERE id = ?`, ...set.params, id);
      }
      return getCred(id);
    },
    async deleteVaultCredential(id) {
      return db.run("DELETE FROM vault_credentials WHERE id = ?", id).changes > 0;
    },
    async listVaultCredentials(vaultId, opts) {
      const f = filters("vault_credentials", opts);
      return listByCreated(db, {
        table: "vault_credentials",
        cols: CRED_COLS,
        where: ["vault_id = ?", ...f.where],
        params: [vaultId, ...f.params],
        opts,
        map: credFromRow,
      });
    },
    async credentialsOfVaults(vaultIds) {
      if (vaultIds.length === 0) return [];
      const marks = vaultIds.map(() => "?").join(", ");
      return db
        .all<CredentialRow>(
          `SELECT ${CRED_COLS.split(", ")
            .map((c) => `c.${c}`)
            .join(", ")} FROM vault_credentials c JOIN vaults v ON v.id = c.vault_id ` +
            `WHERE c.vault_id IN (${marks}) AND c.status = 'active' AND v.status = 'active' ` +
            "ORDER BY c.created_at ASC, c.rid ASC",
          ...vaultIds,
        )
        .map(credFromRow);
    },
    async listSealed(kind, notPrefix, limit) {
      const { table, column } = SEALED[kind];
      return db.all<{ id: string; sealed: string }>(
        `SELECT id, ${column} AS sealed FROM ${table} WHERE ${column} IS NOT NULL AND substr(${column}, 1, ?) <> ? ` +
          "ORDER BY rid ASC LIMIT ?",
        notPrefix.length,
        notPrefix,
        Math.max(0, Math.trunc(limit)),
      );
    },
    async replaceSealed(kind, id, from, to) {
      const { table, column } = SEALED[kind];
      return (
        db.run(`UPDATE ${table} SET ${column} = ? WHERE id = ? AND ${column} = ?`, to, id, from).changes > 0
      );
    },
  };
}
