/** Vaults and their credentials; sealed values of every kind (for key rotation). */
import type { SqlDb } from "../sql/db.js";
import { isIn, limitOf, raw, type Sql, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { Queries, SealedKind, VaultCredentialRecord, VaultListOptions, VaultRecord } from "../types.js";

const VAULTS = table<VaultRecord>("vaults", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  name: "value",
  metadata: "json",
  status: "value",
});

const CREDENTIALS = table<VaultCredentialRecord>("vault_credentials", {
  id: "value",
  vault_id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  name: "value",
  metadata: "json",
  status: "value",
  auth: "json",
  secret: "value",
  server_url: "value",
});

/** The table and column of each kind of sealed value. */
const SEALED: Record<SealedKind, { table: string; column: string }> = {
  environment: { table: "environments", column: "secrets" },
  environment_template: { table: "environment_templates", column: "secrets" },
  vault_credential: { table: "vault_credentials", column: "secret" },
};

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

export function vaultQueries(db: SqlDb): VaultQueries {
  const vaults = rows(db, VAULTS);
  const credentials = rows(db, CREDENTIALS);
  /** `metadata[k] = v` for every pair, and status among the given ones. */
  const filters = (name: string, opts: VaultListOptions): Sql[] => [
    ...db.dialect.jsonHas(`${name}.metadata`, opts.metadata),
    ...(opts.status && opts.status.length > 0 ? [isIn("status", opts.status)] : []),
  ];
  return {
    async insertVault(v) {
      await vaults.insert(v);
    },
    getVault: vaults.get,
    updateVault: (id, patch) => vaults.update(id, patch),
    // The credentials go with it (ON DELETE CASCADE).
    deleteVault: vaults.remove,
    listVaults: (opts) =>
      vaults.list(opts, [sql`project_id = ${opts.project_id}`, ...filters("vaults", opts)]),
    async insertVaultCredential(c) {
      await credentials.insert(c);
    },
    getVaultCredential: credentials.get,
    updateVaultCredential: (id, patch) => credentials.update(id, patch),
    deleteVaultCredential: credentials.remove,
    listVaultCredentials: (vaultId, opts) =>
      credentials.list(opts, [sql`vault_id = ${vaultId}`, ...filters("vault_credentials", opts)]),
    async credentialsOfVaults(vaultIds) {
      if (vaultIds.length === 0) return [];
      return credentials.decode(
        await db.rows<unknown>(
          sql`SELECT ${CREDENTIALS.qualified("c")} FROM vault_credentials c JOIN vaults v ON v.id = c.vault_id
            WHERE ${isIn("c.vault_id", vaultIds)} AND c.status = 'active' AND v.status = 'active'
            ORDER BY c.created_at ASC, c.rid ASC`,
        ),
      );
    },
    listSealed(kind, notPrefix, limit) {
      const { table: t, column } = SEALED[kind];
      const c = raw(column);
      return db.rows<{ id: string; sealed: string }>(
        sql`SELECT id, ${c} AS sealed FROM ${raw(t)} WHERE ${c} IS NOT NULL
          AND substr(${c}, 1, ${notPrefix.length}) <> ${notPrefix} ORDER BY rid ASC LIMIT ${limitOf(limit)}`,
      );
    },
    async replaceSealed(kind, id, from, to) {
      const { table: t, column } = SEALED[kind];
      const c = raw(column);
      return (await db.run(sql`UPDATE ${raw(t)} SET ${c} = ${to} WHERE id = ${id} AND ${c} = ${from}`)) > 0;
    },
  };
}
