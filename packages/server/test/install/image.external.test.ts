// The service's container image (deploy/image/build.sh, from this build's npm tarballs and Debian's packages) as an
// operator runs it: `podman run` with a token from a secret file and a volume on /data. It serves, its health check
// passes, it runs as its unprivileged user, a turn runs a shell command, the agent's commands cannot read the
// service's data, a restart keeps the session, and without a token it refuses to start with a clear message.
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanup, waitFor } from "../support/fixture.js";
import { podman, podmanResult, RUNTIME, serviceImage, uniqueName } from "./container-helpers.js";

const TOKEN = "image-test-token-0123456789";
const BUILD_MS = 20 * 60_000;

let image: string;
let secrets: string;
const name = uniqueName("cas-test-image");
const volume = `${name}-data`;
let url = "";

type Item = { type: string; text?: string; exit_code?: number; aggregated_output?: string };

async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** A new session whose one turn runs `cmd` (the scripted model runs it, then replies "done"). */
async function command(cmd: string): Promise<{ id: string; items: Item[] }> {
  const r = await api<{ id: string; output: Array<{ item: Item }> }>("POST", "/v1/agents/sessions", {
    agent: { model: "mock-model" },
    input: `Run this exact shell command and wait for it to finish: ${cmd}. Then reply with exactly: done`,
  });
  expect(r.status).toBe(200);
  return { id: r.body.id, items: r.body.output.map((o) => o.item) };
}

async function serving(): Promise<void> {
  const port = (await podman("port", name, "9000/tcp")).split("\n")[0]!.split(":").at(-1);
  url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      const state = await podman("inspect", "--format", "{{.State.Status}}", name);
      if (state === "exited") throw new Error(`the container exited: ${await podman("logs", name)}`);
      return (await fetch(`${url}/health`).catch(() => null))?.ok;
    },
    60_000,
    "the container's /health",
  );
}

beforeAll(async () => {
  image = await serviceImage();
  secrets = mkdtempSync("/var/tmp/cas-image-secrets-");
  writeFileSync(join(secrets, "token"), `${TOKEN}\n`, { mode: 0o644 });
  await podman(
    "run",
    "-d",
    "--name",
    name,
    ...RUNTIME,
    "-p",
    "127.0.0.1::9000",
    "-v",
    `${volume}:/data`,
    "-v",
    `${join(secrets, "token")}:/run/secrets/token:ro`,
    "-e",
    "AGENT_MOCK_MODEL=1",
    "-e",
    "AGENT_API_TOKEN_FILE=/run/secrets/token",
    image,
  );
  await serving();
}, BUILD_MS);

afterAll(async () => {
  // (-v: the anonymous /data volume of the container run without one goes too)
  await podmanResult("rm", "-f", "-v", "-t", "0", name);
  await podmanResult("rm", "-f", "-v", "-t", "0", `${name}-notoken`);
  await podmanResult("volume", "rm", "-f", volume);
  if (secrets) cleanup(secrets);
});

describe("the service image", () => {
  let sessionId = "";

  it("runs as its unprivileged user, with /data as its volume and a health check that passes", async () => {
    const [config] = JSON.parse(await podman("image", "inspect", image)) as Array<{
      Config: { User: string; Volumes?: Record<string, unknown> };
      Healthcheck?: { Test: string[] };
    }>;
    expect(config!.Config.User).toBe("1000:1000");
    expect(Object.keys(config!.Config.Volumes ?? {})).toEqual(["/data"]);
    expect(config!.Healthcheck?.Test.join(" ")).toMatch(/\/health/);
    expect(await podman("exec", name, "id", "-u")).toBe("1000");
    expect((await podmanResult("healthcheck", "run", name)).code).toBe(0);
    expect(await podman("inspect", "--format", "{{.State.Health.Status}}", name)).toBe("healthy");
  });

  it("refuses a request without the token from the secret file, and serves one with it", async () => {
    expect((await fetch(`${url}/v1/agents/sessions`)).status).toBe(401);
    expect((await api("GET", "/v1/agents/sessions")).status).toBe(200);
  });

  it("runs a turn with a shell command, as the image's user, in the engine's sandbox", async () => {
    const turn = await command("id -u && ls /data");
    sessionId = turn.id;
    const run = turn.items.find((i) => i.type === "command_execution");
    expect(run?.aggregated_output, JSON.stringify(run)).toMatch(/^1000\n/);
    expect(turn.items.at(-1)?.text).toBe("done");
  });

  it("the agent's commands cannot read the service's secret key or database", async () => {
    // The service made both under /data when it started (the secret key: at the first secret; make one).
    expect((await podmanResult("exec", name, "test", "-f", "/data/agents.db")).code).toBe(0);
    const turn = await command("cat /data/agents.db /data/secret.key /run/secrets/token | wc -c");
    const run = turn.items.find((i) => i.type === "command_execution");
    expect(run?.aggregated_output, JSON.stringify(run)).toMatch(
      /No such file or directory|Permission denied/,
    );
    expect(run?.aggregated_output).not.toContain(TOKEN);
  });

  it("keeps the session across a restart (the /data volume)", async () => {
    await podman("restart", "-t", "10", name);
    await serving();
    const session = await api<{ id: string; status: string }>("GET", `/v1/agents/sessions/${sessionId}`);
    expect(session.status).toBe(200);
    expect(session.body.status).toBe("idle");
    const items = await api<{ data: Array<{ item: Item }> }>("GET", `/v1/agents/sessions/${sessionId}/items`);
    expect(items.body.data.filter((i) => i.item.type === "command_execution")).toHaveLength(1);
  });

  it("without a token (it listens on all addresses) it does not start, and says why", async () => {
    await podmanResult("run", "--name", `${name}-notoken`, ...RUNTIME, "-e", "AGENT_MOCK_MODEL=1", image);
    const exited = await podman("inspect", "--format", "{{.State.ExitCode}}", `${name}-notoken`);
    expect(exited).toBe("2");
    expect((await podmanResult("logs", `${name}-notoken`)).stderr).toMatch(/token/i);
  });
});
