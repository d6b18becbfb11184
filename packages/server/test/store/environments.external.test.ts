/**
 * The store contract of environments, environment templates, vaults, credentials and sealed values (key rotation),
 * against the embedded SQLite store and a PostgreSQL database made for this run (see postgres.ts).
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/index.js";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import type {
  EnvironmentRecord,
  EnvironmentTemplateRecord,
  Store,
  VaultCredentialRecord,
  VaultRecord,
} from "../../src/store/types.js";
import { dropTestDatabase, pgTestUrl } from "../support/postgres.js";

const P1 = "proj_1";
const P2 = "proj_2";

const environment = (
  id: string,
  created_at = 1000,
  over: Partial<EnvironmentRecord> = {},
): EnvironmentRecord => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  type: "openai_hosted",
  status: "pending",
  session_id: null,
  directory: `/ws/${id}`,
  config: {
    capability_directories: [],
    files: [{ id: "envfile_1", type: "inline", path: "/workspace/a.txt", size_bytes: 3 }],
    network: { access: "disabled", allowed_domains: [] },
    packages: { npm: ["left-pad"], python: [], system: [] },
    environment_template_id: null,
    setup_commands: 2,
  },
  secrets: "v1.aaaaaaaa.iv.tag.ct",
  error: null,
  vault_ids: ["vault_1"],
  owner_instance: null,
  ...over,
});

const template = (id: string, created_at = 1000, over: Partial<EnvironmentTemplateRecord> = {}) => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  name: `template ${id}`,
  config: {
    capability_directories: null,
    files: [{ type: "inline" as const, path: "/workspace/t.txt", size_bytes: 5 }],
    network: { access: "disabled" as const, allowed_domains: [] },
    packages: { npm: [], python: [], system: [] },
    desktop: null,
  },
  secrets: null,
  ...over,
});

const vault = (id: string, created_at = 1000, over: Partial<VaultRecord> = {}): VaultRecord => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  name: `vault ${id}`,
  metadata: {},
  status: "active",
  ...over,
});

const credential = (
  id: string,
  vault_id: string,
  created_at = 1000,
  over: Partial<VaultCredentialRecord> = {},
): VaultCredentialRecord => ({
  id,
  vault_id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  name: `credential ${id}`,
  metadata: {},
  status: "active",
  auth: { type: "static_bearer", mcp_server_url: "https://mcp.example.com/mcp" },
  secret: "v1.aaaaaaaa.iv.tag.ct",
  server_url: "https://mcp.example.com/mcp",
  ...over,
});

const ids = <T extends { id: string }>(rows: T[]) => rows.map((r) => r.id);

function contract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract (environments, vaults): ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it("environments: insert, get, update (JSON columns round-trip), list by project, pending ones", async () => {
      await store.insertEnvironment(environment("env_a", 1000));
      await store.insertEnvironment(environment("env_b", 1001, { status: "ready" }));
      await store.insertEnvironment(environment("env_c", 1002, { project_id: P2 }));
      expect(await store.getEnvironment("env_a")).toEqual(environment("env_a", 1000));
      expect(await store.getEnvironment("env_x")).toBeUndefined();
      const failed = await store.updateEnvironment("env_a", {
        status: "failed",
        error: { code: "setup_command_failed", message: "exit 1", type: "environment_error" },
        updated_at: 1005,
      });
      expect(failed).toMatchObject({
        status: "failed",
        updated_at: 1005,
        error: { code: "setup_command_failed" },
      });
      expect((await store.updateEnvironment("env_a", { error: null }))?.error).toBeNull();
      expect(ids((await store.listEnvironments({ project_id: P1 })).data)).toEqual(["env_b", "env_a"]);
      expect(ids((await store.listEnvironments({ project_id: P1, order: "asc", limit: 1 })).data)).toEqual([
        "env_a",
      ]);
      const page = await store.listEnvironments({ project_id: P1, order: "asc", after: "env_a" });
      expect(ids(page.data)).toEqual(["env_b"]);
      // another project's id is no cursor here
      expect((await store.listEnvironments({ project_id: P1, after: "env_c" })).data).toEqual([]);
      expect(ids(await store.listPendingEnvironments(10))).toEqual(["env_c"]);
    });

    it("a lifecycle change writes its webhook event with it: once, to the project's subscribed endpoints", async () => {
      const endpoint = (id: string, project_id: string, event_types: string[]) => ({
        id,
        project_id,
        created_at: 900,
        updated_at: 900,
        name: id,
        url: "https://hooks.example/x",
        event_types,
        secret: "sealed",
        secret_hint: "whsec_…abcd",
        old_secret: null,
        old_secret_expires_at: null,
      });
      await store.insertWebhookEndpoint(endpoint("we_ready", P1, ["agent.environment.ready"]));
      await store.insertWebhookEndpoint(endpoint("we_session", P1, ["agent.session.idle"]));
      await store.insertWebhookEndpoint(endpoint("we_other", P2, ["agent.environment.ready"]));
      await store.insertEnvironment(environment("env_a", 1000));
      await store.updateEnvironment("env_a", { status: "ready", updated_at: 1010 });
      // The same status again, or another field: no new event.
      await store.updateEnvironment("env_a", { status: "ready", updated_at: 1011 });
      await store.updateEnvironment("env_a", { error: null });
      const sent = (await store.listWebhookDeliveries("we_ready", {})).data;
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({
        project_id: P1,
        session_id: null,
        event_type: "agent.environment.ready",
        event_created_at: 1010,
        data: { id: "env_a" },
        status: "pending",
      });
      expect((await store.listWebhookDeliveries("we_session", {})).data).toEqual([]);
      expect((await store.listWebhookDeliveries("we_other", {})).data).toEqual([]);
      // A status no event tells of (pending, connected) writes nothing.
      await store.updateEnvironment("env_a", { status: "connected", updated_at: 1020 });
      expect((await store.listWebhookDeliveries("we_ready", {})).data).toHaveLength(1);
    });

    it("attachEnvironment gives an unattached environment to one session only", async () => {
      await store.insertEnvironment(environment("env_a"));
      const first = await store.attachEnvironment("env_a", "sess_1", 2000);
      expect(first).toMatchObject({ session_id: "sess_1", updated_at: 2000 });
      expect(await store.attachEnvironment("env_a", "sess_2", 2001)).toBeUndefined();
      expect(await store.attachEnvironment("env_missing", "sess_2", 2001)).toBeUndefined();
      expect((await store.getEnvironment("env_a"))?.session_id).toBe("sess_1");
    });

    it("templates: insert, get, update, list, delete", async () => {
      await store.insertEnvironmentTemplate(template("envtpl_a", 1000));
      await store.insertEnvironmentTemplate(template("envtpl_b", 1001, { secrets: "v1.k.i.t.c" }));
      await store.insertEnvironmentTemplate(template("envtpl_c", 1002, { project_id: P2 }));
      expect(await store.getEnvironmentTemplate("envtpl_a")).toEqual(template("envtpl_a", 1000));
      const updated = await store.updateEnvironmentTemplate("envtpl_a", { name: null, updated_at: 1010 });
      expect(updated).toMatchObject({ name: null, updated_at: 1010 });
      expect(ids((await store.listEnvironmentTemplates({ project_id: P1 })).data)).toEqual([
        "envtpl_b",
        "envtpl_a",
      ]);
      expect(await store.deleteEnvironmentTemplate("envtpl_a")).toBe(true);
      expect(await store.deleteEnvironmentTemplate("envtpl_a")).toBe(false);
      expect(await store.getEnvironmentTemplate("envtpl_a")).toBeUndefined();
    });

    it("vaults: insert, get, update, list with metadata and status filters, delete takes the credentials", async () => {
      await store.insertVault(vault("vault_a", 1000, { metadata: { team: "blue" } }));
      await store.insertVault(vault("vault_b", 1001, { metadata: { team: "red" }, status: "archived" }));
      await store.insertVault(vault("vault_c", 1002, { project_id: P2 }));
      expect(await store.getVault("vault_a")).toEqual(vault("vault_a", 1000, { metadata: { team: "blue" } }));
      expect(ids((await store.listVaults({ project_id: P1 })).data)).toEqual(["vault_b", "vault_a"]);
      expect(ids((await store.listVaults({ project_id: P1, metadata: { team: "blue" } })).data)).toEqual([
        "vault_a",
      ]);
      expect(ids((await store.listVaults({ project_id: P1, status: ["archived"] })).data)).toEqual([
        "vault_b",
      ]);
      expect(
        ids((await store.listVaults({ project_id: P1, status: ["active", "archived"], order: "asc" })).data),
      ).toEqual(["vault_a", "vault_b"]);
      const renamed = await store.updateVault("vault_a", { name: "renamed", metadata: {}, updated_at: 1003 });
      expect(renamed).toMatchObject({ name: "renamed", metadata: {}, updated_at: 1003 });
      await store.insertVaultCredential(credential("cred_1", "vault_a"));
      expect(await store.deleteVault("vault_a")).toBe(true);
      expect(await store.getVault("vault_a")).toBeUndefined();
      expect(await store.getVaultCredential("cred_1")).toBeUndefined();
      expect(await store.deleteVault("vault_a")).toBe(false);
    });

    it("credentials: insert, get, update, list with filters, the active credentials of active vaults", async () => {
      await store.insertVault(vault("vault_a", 1000));
      await store.insertVault(vault("vault_b", 1001));
      await store.insertVault(vault("vault_old", 1002, { status: "archived" }));
      await store.insertVaultCredential(credential("cred_1", "vault_a", 1000, { metadata: { env: "prod" } }));
      await store.insertVaultCredential(
        credential("cred_2", "vault_a", 1001, {
          auth: {
            type: "environment_variable",
            secret_name: "API_KEY",
            networking: { type: "unrestricted" },
          },
          server_url: null,
        }),
      );
      await store.insertVaultCredential(credential("cred_3", "vault_b", 1002, { status: "archived" }));
      await store.insertVaultCredential(credential("cred_4", "vault_old", 1003));
      await store.insertVaultCredential(credential("cred_5", "vault_b", 1004));
      expect(await store.getVaultCredential("cred_1")).toEqual(
        credential("cred_1", "vault_a", 1000, { metadata: { env: "prod" } }),
      );
      expect(ids((await store.listVaultCredentials("vault_a", {})).data)).toEqual(["cred_2", "cred_1"]);
      expect(ids((await store.listVaultCredentials("vault_a", { metadata: { env: "prod" } })).data)).toEqual([
        "cred_1",
      ]);
      expect(ids((await store.listVaultCredentials("vault_b", { status: ["archived"] })).data)).toEqual([
        "cred_3",
      ]);
      expect(ids(await store.credentialsOfVaults(["vault_a", "vault_b", "vault_old"]))).toEqual([
        "cred_1",
        "cred_2",
        "cred_5",
      ]);
      expect(await store.credentialsOfVaults([])).toEqual([]);
      const rotated = await store.updateVaultCredential("cred_1", {
        secret: "v1.bbbbbbbb.iv.tag.ct2",
        auth: { type: "static_bearer", mcp_server_url: "https://mcp.example.com/mcp" },
        updated_at: 1100,
      });
      expect(rotated).toMatchObject({ secret: "v1.bbbbbbbb.iv.tag.ct2", updated_at: 1100 });
      expect(await store.deleteVaultCredential("cred_1")).toBe(true);
      expect(await store.deleteVaultCredential("cred_1")).toBe(false);
    });

    it("sealed values: listed by key prefix, replaced only if unchanged", async () => {
      await store.insertVault(vault("vault_a"));
      await store.insertVaultCredential(credential("cred_old", "vault_a", 1000, { secret: "v1.oldkey00.x" }));
      await store.insertVaultCredential(credential("cred_new", "vault_a", 1001, { secret: "v1.newkey00.y" }));
      await store.insertEnvironment(environment("env_old", 1000, { secrets: "v1.oldkey00.e" }));
      await store.insertEnvironment(environment("env_none", 1001, { secrets: null }));
      await store.insertEnvironmentTemplate(template("envtpl_old", 1000, { secrets: "v1.oldkey00.t" }));
      expect(await store.listSealed("vault_credential", "v1.newkey00.", 10)).toEqual([
        { id: "cred_old", sealed: "v1.oldkey00.x" },
      ]);
      expect(await store.listSealed("environment", "v1.newkey00.", 10)).toEqual([
        { id: "env_old", sealed: "v1.oldkey00.e" },
      ]);
      expect(await store.listSealed("environment_template", "v1.newkey00.", 10)).toEqual([
        { id: "envtpl_old", sealed: "v1.oldkey00.t" },
      ]);
      expect(await store.replaceSealed("vault_credential", "cred_old", "v1.stale", "v1.newkey00.z")).toBe(
        false,
      );
      expect(
        await store.replaceSealed("vault_credential", "cred_old", "v1.oldkey00.x", "v1.newkey00.z"),
      ).toBe(true);
      expect((await store.getVaultCredential("cred_old"))?.secret).toBe("v1.newkey00.z");
      expect(await store.listSealed("vault_credential", "v1.newkey00.", 10)).toEqual([]);
      expect(await store.replaceSealed("environment", "env_old", "v1.oldkey00.e", "v1.newkey00.f")).toBe(
        true,
      );
      expect((await store.getEnvironment("env_old"))?.secrets).toBe("v1.newkey00.f");
    });
  });
}

contract("sqlite", async () => SqliteStore.open(":memory:"));

const databases: string[] = [];
let runDatabase: Promise<string> | undefined;
contract("postgres", async () => {
  runDatabase ??= pgTestUrl().then((u) => {
    databases.push(u);
    return u;
  });
  const store = await PostgresStore.open(await runDatabase);
  await store.pool.query(
    "TRUNCATE environments, environment_templates, vaults, vault_credentials RESTART IDENTITY",
  );
  return store;
});
afterAll(async () => {
  for (const u of databases) await dropTestDatabase(u);
});
