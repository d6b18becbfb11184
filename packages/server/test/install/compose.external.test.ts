// deploy/compose.yaml with podman-compose (Debian's 1.0.3): PostgreSQL (the image deploy/postgres/build.sh makes
// from Debian's packages: nothing may be pulled here) and two instances of the service image, their database URL,
// token and secret key from secret files. Both become healthy and see each other; a session made through one
// instance is read and continued through the other; without the token from the secret file, 401.
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cli-process.js";
import { cleanup, waitFor } from "../support/fixture.js";
import { CONTAINERS_CONF, freePort, postgresImage, serviceImage, uniqueName } from "./container-helpers.js";

const exec = promisify(execFile);
const TOKEN = "compose-test-token-0123456789";
const BUILD_MS = 20 * 60_000;
const project = uniqueName("cas-test-compose").replaceAll("-", "_");

let dir = "";
let env: NodeJS.ProcessEnv = {};
let urls: [string, string] = ["", ""];

async function compose(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return exec("podman-compose", ["-f", join(repoRoot, "deploy/compose.yaml"), "-p", project, ...args], {
    env,
    cwd: dir,
    maxBuffer: 16 << 20,
    timeout: 5 * 60_000,
  });
}

/** A request in the template dialect, or in the official one with `official`. */
async function api<T>(base: string, method: string, path: string, body?: unknown, official = false) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body ? { "content-type": "application/json" } : {}),
      ...(official ? { "openai-beta": "agents=v1" } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

beforeAll(async () => {
  const [service, postgres] = await Promise.all([serviceImage(), postgresImage()]);
  dir = mkdtempSync("/var/tmp/cas-compose-");
  // The secrets: readable inside the containers (each runs as its own user), kept from other users of this host
  // by their directory.
  const secrets = join(dir, "secrets");
  mkdirSync(secrets, { mode: 0o700 });
  const write = (name: string, value: string) =>
    writeFileSync(join(secrets, name), `${value}\n`, { mode: 0o644 });
  write("db_password", "compose-db-password");
  write("database_url", "postgres://agents:compose-db-password@postgres:5432/agents");
  write("api_token", TOKEN);
  write("secret_key", Buffer.alloc(32, 9).toString("base64"));
  chmodSync(secrets, 0o700);
  const ports = [await freePort(), await freePort()] as const;
  urls = [`http://127.0.0.1:${ports[0]}`, `http://127.0.0.1:${ports[1]}`];
  env = {
    ...process.env,
    AGENT_IMAGE: service,
    POSTGRES_IMAGE: postgres,
    SECRETS_DIR: secrets,
    AGENT_PORT_1: String(ports[0]),
    AGENT_PORT_2: String(ports[1]),
    AGENT_MOCK_MODEL: "1",
    // (podman, started by podman-compose, reads it: this kind of machine's runtime, cgroup manager and ulimits)
    CONTAINERS_CONF: join(dir, "containers.conf"),
  };
  writeFileSync(join(dir, "containers.conf"), CONTAINERS_CONF);
  await compose("up", "-d");
  for (const url of urls) {
    await waitFor(
      async () => (await fetch(`${url}/health`).catch(() => null))?.ok,
      120_000,
      `${url}/health (the instance restarts until PostgreSQL accepts it)`,
    );
  }
}, BUILD_MS);

afterAll(async () => {
  if (dir) {
    await compose("down", "-v").catch(() => {});
    cleanup(dir);
  }
});

describe("compose: PostgreSQL and two instances", () => {
  it("both instances serve one database: a session made through one is read and continued through the other", async () => {
    const [a, b] = urls;
    // (the token came from its secret file: without it, 401)
    expect((await fetch(`${a}/v1/agents/sessions`)).status).toBe(401);
    const created = await api<{ id: string; output: Array<{ item: { type: string; text?: string } }> }>(
      a,
      "POST",
      "/v1/agents/sessions",
      { agent: { model: "mock-model" }, input: "Reply with exactly: from compose" },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const reply = created.body.output.find((o) => o.item.type === "agent_message");
    expect(reply?.item.text, JSON.stringify(created.body)).toBe("from compose");
    const read = await api<{ id: string; status: string }>(
      b,
      "GET",
      `/v1/agents/sessions/${created.body.id}`,
    );
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("idle");
    // The next turn, posted to the other instance in the official dialect (202; it runs there).
    const next = await api<unknown>(
      b,
      "POST",
      `/v1/agents/sessions/${created.body.id}/events`,
      {
        events: [
          {
            type: "agent.session.input.message",
            input: [{ role: "user", content: [{ type: "input_text", text: "Reply with exactly: second" }] }],
          },
        ],
      },
      true,
    );
    expect(next.status).toBe(202);
    await waitFor(
      async () => {
        const turns = await api<{ data: Array<{ status: string }> }>(
          a,
          "GET",
          `/v1/agents/sessions/${created.body.id}/turns`,
        );
        return turns.body.data.length === 2 && turns.body.data.every((t) => t.status === "completed");
      },
      30_000,
      "the second turn to complete, seen from the first instance",
    );
    const items = await api<{ data: Array<{ item: { type: string; text?: string } }> }>(
      a,
      "GET",
      `/v1/agents/sessions/${created.body.id}/items?order=asc`,
    );
    expect(items.body.data.filter((i) => i.item.type === "agent_message").map((i) => i.item.text)).toEqual([
      "from compose",
      "second",
    ]);
  });

  it("the instances see each other: PostgreSQL's cluster, two live instances, on both", async () => {
    for (const url of urls) {
      const health = await waitFor(
        async () => {
          const h = (await (await fetch(`${url}/health`)).json()) as {
            cluster: { kind: string; live?: number };
          };
          return h.cluster.live === 2 ? h : null;
        },
        30_000,
        `${url} to see two live instances`,
      );
      expect(health?.cluster.kind).toBe("postgres");
    }
  });
});
