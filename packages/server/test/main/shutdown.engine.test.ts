// A graceful stop waits for everything the service started: once `stop()` resolves nothing of it runs or writes in
// its directories any more (the checkpoint a just-created session records, an environment being prepared, the
// commands of a turn it interrupted), and what those were doing is recorded.
import { randomInt } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cmdline, pidsRunning } from "@codex-agent-api/testkit";
import { afterEach, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import { expectNothingLeft, type ServerFixture, startServer, waitFor } from "../support/fixture.js";

let s: ServerFixture | null = null;
afterEach(async () => {
  await s?.close();
  s = null;
});

const OFFICIAL = { "openai-beta": "agents=v1" };

/** Pids of the processes whose arguments are exactly `sleep <seconds>`. */
const sleeping = (seconds: string) => pidsRunning(seconds).filter((p) => cmdline(p) === `sleep ${seconds}`);

/** The service's database, opened again after the service has stopped. */
function reopen(f: ServerFixture) {
  return SqliteStore.open(join(f.dataDir, "agents.db"));
}

it("waits for the checkpoints the sessions created just before the stop record", async () => {
  s = await startServer();
  const f = s;
  const created = await Promise.all(
    Array.from({ length: 4 }, () =>
      f.json<{ id: string }>("POST", "/v1/agents/sessions", { workspace_mode: "session" }),
    ),
  );
  // Each session's baseline checkpoint is being recorded in the background (git, in the data directory).
  await s.service.stop();
  const recorded = created.map((c) =>
    existsSync(join(f.config.checkpoints.dir, c.body.id, "refs", "checkpoint-head")),
  );
  expect(recorded).toEqual([true, true, true, true]);
  expectNothingLeft(s.dataDir);
});

it("stops an environment being prepared: its setup command ends, and it fails as after a restart", async () => {
  s = await startServer();
  const marker = `57.${randomInt(100_000, 999_999)}`;
  const env = await s.json<{ id: string; status: string }>(
    "POST",
    "/v1/agents/environments",
    { environment: { type: "openai_hosted", setup_commands: [{ command: `sleep ${marker}` }] } },
    OFFICIAL,
  );
  expect(env).toMatchObject({ status: 200, body: { status: "pending" } });
  await waitFor(() => sleeping(marker).length > 0, 30_000, "the setup command to run");
  await s.service.stop();
  expect(pidsRunning(marker)).toEqual([]);
  expectNothingLeft(s.dataDir);
  const store = reopen(s);
  try {
    expect(await store.getEnvironment(env.body.id)).toMatchObject({
      status: "failed",
      error: { code: "server_restart", message: expect.stringMatching(/server stopped/) },
    });
  } finally {
    await store.close();
  }
});

it("ends the commands of the turns it interrupts, and their items say why", async () => {
  s = await startServer();
  const marker = `57.${randomInt(100_000, 999_999)}`;
  const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", { workspace_mode: "session" });
  const id = created.body.id;
  const turn = s.request("POST", `/v1/agents/sessions/${id}/events`, {
    input: `Run this exact shell command and wait for it to finish: sleep ${marker}. Then reply with exactly: never`,
  });
  await waitFor(
    async () => {
      const items = await s!.service.core.store.listItems(id, { states: ["started"] });
      return items.data.some((i) => i.type === "commandExecution") && sleeping(marker).length > 0;
    },
    30_000,
    "the command to run",
  );
  await s.service.stop();
  await turn.then((r) => r.body?.cancel()).catch(() => undefined);
  // Not left running once the service says it has stopped.
  expect(pidsRunning(marker)).toEqual([]);
  expectNothingLeft(s.dataDir);
  const store = reopen(s);
  try {
    const session = (await store.getSession(id))!;
    expect(session.active_turn_id).toBeNull();
    const items = await store.listItems(id, {});
    const command = items.data.find((i) => i.type === "commandExecution")!;
    expect(command.state).toBe("incomplete");
    expect(command.data).toMatchObject({
      status: "failed",
      aggregatedOutput: "[command stopped: server shutting down]",
    });
    const turns = await store.listTurns(id, {});
    expect(turns.data.map((t) => [t.status, t.error?.message])).toEqual([
      ["cancelled", "server shutting down"],
    ]);
  } finally {
    await store.close();
  }
});
