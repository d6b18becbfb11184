/** Vaults and their credentials; sealed values of every kind (for key rotation). */
import type { Queries, SealedKind, VaultCredentialRecord, VaultListOptions, VaultRecord } from "../types.js";
import { asIs, asJson, json, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed: a row is the record. */
const VAULT_COLS = "id, project_id, created_at, updated_at, name, metadata, status";
const CRED_COLS =
  "id, vault_id, project_id, created_at, updated_at, name, metadata, status, auth, secret, server_url";

const VAULT_ENCODE = { updated_at: asIs, name: asIs, metadata: asJson, status: asIs };
const CRED_ENCODE = {
  updated_at: asIs,
  name: asIs,
  metadata: asJson,
  status: asIs,
  auth: asJson,
  secret: asIs,
};

/** The table and column of each kind of sealed value. */
const SEALED: Record<SealedKind, { table: string; column: string }> = {
  environment: { table: "environments", column: "secrets" },
  environment_template: { table: "environment_templates", column: "secrets" },
  vault_credential: { table: "vault_credentials", column: "secret" },
};

/** The metadata and status filters, as conditions on parameters from `$first`. */
function filters(opts: VaultListOptions, first: number): { where: string[]; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (opts.metadata && Object.keys(opts.metadata).length > 0) {
    params.push(json(opts.metadata));
    where.push(`metadata @> $${first + params.length - 1}::jsonb`);
  }
  if (opts.status && opts.status.length > 0) {
    params.push([...opts.status]);
    where.push(`status = ANY($${first + params.length - 1}::text[])`);
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

export function vaultQueries(db: PgDb): VaultQueries {
  const getVault = (id: string) =>
    db.row<VaultRecord>(`SELECT ${VAULT_COLS} FROM vaults WHERE id = $1`, [id]);
  const getCred = (id: string) =>
    db.row<VaultCredentialRecord>(`SELECT ${CRED_COLS} FROM vault_credentials WHERE id = $1`, [id]);
  return {
    async insertVault(v) {
      await db.run(`INSERT INTO vaults (${VAULT_COLS}) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`, [
        v.id,
        v.project_id,
        v.created_at,
        v.updated_at,
        v.name,
        json(v.metadata),
        v.status,
      ]);
    },
    getVault,
    async updateVault(id, patch) {
      const set = setClause(patch, VAULT_ENCODE, 2);
      if (set.params.length === 0) return getVault(id);
      return db.row<VaultRecord>(`UPDATE vaults SET ${set.sql} WHERE id = $1 RETURNING ${VAULT_COLS}`, [
        id,
        ...set.params,
      ]);
    },
    async deleteVault(id) {
      // The credentials go with it (ON DELETE CASCADE).
      return (await db.run("DELETE FROM vaults WHERE id = $1", [id])) > 0;
    },
    async listVaults(opts) {
      const f = filters(opts, 2);
      return listByCreated<VaultRecord, VaultRecord>(db, {
        table: "vaults",
        cols: VAULT_COLS,
        where: ["project_id = $1", ...f.where],
        params: [opts.project_id, ...f.params],
        opts,
        map: (r) => r,
      });
    },
    async insertVaultCredential(c) {
      await db.run(
        `INSERT INTO vault_credentials (${CRED_COLS}) ` +
          "VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9::jsonb, $10, $11)",
        [
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
        ],
      );
    },
    getVaultCredential: getCred,
    async updateVaultCredential(id, patch) {
      const set = setClause(patch, CRED_ENCODE, 2);
      if (set.params.length === 0) return getCred(id);
      return db.row<VaultCredentialRecord>(
        `UPDATE vault_credentials SET ${set.sql} WHERE id = $1 RETURNING ${CRED_COLS}`,
        [id, ...set.params],
      );
    },
    async deleteVaultCredential(id) {
      return (await db.run("DELETE FROM vault_credentials WHERE id = $1", [id])) > 0;
    },
    async listVaultCredentials(vaultId, opts) {
      const f = filters(opts, 2);
      return listByCreated<VaultCredentialRecord, VaultCredentialRecord>(db, {
        table: "vault_credentials",
        cols: CRED_COLS,
        where: ["vault_id = $1", ...f.where],
        params: [vaultId, ...f.params],
        opts,
        map: (r) => r,
      });
    },
    async credentialsOfVaults(vaultIds) {
      if (vaultIds.length === 0) return [];
      const cols = CRED_COLS.split(", ")
        .map((c) => `c.${c}`)
        .join(", ");
      return db.rows<VaultCredentialRecord>(
        `SELECT ${cols} FROM vault_credentials c JOIN vaults v ON v.id = c.vault_id ` +
          "WHERE c.vault_id = ANY($1::text[]) AND c.status = 'active' AND v.status = 'active' " +
          "ORDER BY c.created_at ASC, c.rid ASC",
        [[...vaultIds]],
      );
    },
    async listSealed(kind, notPrefix, limit) {
      const { table, column } = SEALED[kind];
      return db.rows<{ id: string; sealed: string }>(
        `SELECT id, ${column} AS sealed FROM ${table} WHERE ${column} IS NOT NULL ` +
          `AND left(${column}, $1) <> $2 ORDER BY rid ASC LIMIT $3`,
        [notPrefix.length, notPrefix, Math.max(0, Math.trunc(limit))],
      );
    },
    async replaceSealed(kind, id, from, to) {
      const { table, column } = SEALED[kind];
      return (
        (await db.run(`UPDATE ${table} SET ${column} = $1 WHERE id = $2 AND ${column} = $3`, [
          to,
          id,
          from,
        ])) > 0
      );
    },
  };
}
