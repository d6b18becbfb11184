/**
 * Official vaults (`client.beta.agents.vaults.*`, `/v1/vaults`): vaults and their credentials in the caller's
 * project. Credential secrets are write-only: no response carries them (the wire objects are built from the
 * non-secret fields) and request bodies are never logged.
 */

import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ListQuery, Metadata } from "../../http/validate.js";
import type { VaultStatus } from "../../model/records.js";
import { credentialObject, vaultObject } from "./render/environments.js";
import * as openai from "./render.js";

const VaultParams = z.object({ vault_id: z.string() });
const CredentialParams = z.object({ vault_id: z.string(), credential_id: z.string() });

const VaultCreate = z
  .object({ name: z.string().optional(), metadata: Metadata.nullable().optional() })
  .strict();
const VaultUpdate = z
  .object({ name: z.string().nullable().optional(), metadata: Metadata.optional() })
  .strict();

const CredentialCreate = z
  .object({ auth: z.record(z.string(), z.unknown()), name: z.string(), metadata: Metadata.optional() })
  .strict();
const CredentialUpdate = z
  .object({ auth: z.record(z.string(), z.unknown()).optional(), metadata: Metadata.optional() })
  .strict();

const Status = z.enum(["active", "archived"]);
/** `status=active`, or `status[]=active&status[]=archived` (the SDK's brackets), or several `status=`. */
const VaultListQuery = ListQuery.extend({
  status: z.union([Status, z.array(Status)]).optional(),
  "status[]": z.union([Status, z.array(Status)]).optional(),
}).loose();

function metadataFilter(query: Record<string, unknown>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    const m = /^metadata\[(.+)\]$/.exec(k);
    if (m?.[1] && typeof v === "string") out[m[1]] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function listOptions(q: z.infer<typeof VaultListQuery>) {
  const status = [q.status ?? [], q["status[]"] ?? []].flat() as VaultStatus[];
  const metadata = metadataFilter(q);
  return {
    ...(q.limit ? { limit: q.limit } : {}),
    ...(q.after ? { after: q.after } : {}),
    ...(q.order ? { order: q.order } : {}),
    ...(status.length > 0 ? { status } : {}),
    ...(metadata ? { metadata } : {}),
  };
}

export function vaultRoutes(app: App, { vaults }: Application): void {
  app.post("/v1/vaults", { schema: { body: VaultCreate } }, async (req) =>
    vaultObject(await vaults.create(req.scope, req.body)),
  );

  app.get("/v1/vaults", { schema: { querystring: VaultListQuery } }, async (req) => {
    const p = await vaults.list(req.scope, listOptions(req.query));
    return openai.page({ data: p.data.map(vaultObject), has_more: p.has_more });
  });

  app.get("/v1/vaults/:vault_id", { schema: { params: VaultParams } }, async (req) =>
    vaultObject(await vaults.get(req.scope, req.params.vault_id)),
  );

  app.post("/v1/vaults/:vault_id", { schema: { params: VaultParams, body: VaultUpdate } }, async (req) =>
    vaultObject(await vaults.update(req.scope, req.params.vault_id, req.body)),
  );

  app.delete("/v1/vaults/:vault_id", { schema: { params: VaultParams } }, async (req) => {
    await vaults.delete(req.scope, req.params.vault_id);
    return { id: req.params.vault_id, object: "vault.deleted", deleted: true };
  });

  app.post(
    "/v1/vaults/:vault_id/credentials",
    { schema: { params: VaultParams, body: CredentialCreate } },
    async (req) => credentialObject(await vaults.createCredential(req.scope, req.params.vault_id, req.body)),
  );

  app.get(
    "/v1/vaults/:vault_id/credentials",
    { schema: { params: VaultParams, querystring: VaultListQuery } },
    async (req) => {
      const p = await vaults.listCredentials(req.scope, req.params.vault_id, listOptions(req.query));
      return openai.page({ data: p.data.map(credentialObject), has_more: p.has_more });
    },
  );

  app.get(
    "/v1/vaults/:vault_id/credentials/:credential_id",
    { schema: { params: CredentialParams } },
    async (req) =>
      credentialObject(await vaults.getCredential(req.scope, req.params.vault_id, req.params.credential_id)),
  );

  app.post(
    "/v1/vaults/:vault_id/credentials/:credential_id",
    { schema: { params: CredentialParams, body: CredentialUpdate } },
    async (req) =>
      credentialObject(
        await vaults.updateCredential(req.scope, req.params.vault_id, req.params.credential_id, req.body),
      ),
  );

  app.delete(
    "/v1/vaults/:vault_id/credentials/:credential_id",
    { schema: { params: CredentialParams } },
    async (req) => {
      await vaults.deleteCredential(req.scope, req.params.vault_id, req.params.credential_id);
      return { id: req.params.credential_id, object: "vault.credential.deleted", deleted: true };
    },
  );
}
