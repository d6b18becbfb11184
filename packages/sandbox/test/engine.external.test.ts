// The real engine (codex app-server, mock model) running a thread's commands in a container sandbox through
// `environment/add` with the executor URL and token — across an idle stop (transparent to the engine) and a replace
// (the engine reconnects to the same URL).
import { rmSync } from "node:fs";
import { Codex, type ThreadOptions } from "@codex-agent-api/codex";
import { type CodexHome, createCodexHome, MockResponsesServer, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContainerBackend, limitsForSize, type Sandbox } from "../src/index.js";
import { containersWithPrefix, ensureImage, MiB, mountsUnder, runPrefix, tempRoot } from "./helpers.js";

const prefix = runPrefix("eng");
const root = tempRoot("eng");
let backend: ContainerBackend;
let mock: MockResponsesServer;
let home: CodexHome;
let codex: Codex;
let sandbox: Sandbox;

beforeAll(async () => {
  await ensureImage();
  backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix });
  mock = await MockResponsesServer.start({ fallback: null });
  home = await createCodexHome({ mockUrl: mock.url });
  codex = await Codex.start({ env: home.env, cwd: home.workspace });
}, 300_000);

afterAll(async () => {
  await codex?.close();
  await mock?.close();
  await home?.dispose();
  await sandbox?.destroy();
  await backend?.close();
  expect(containersWithPrefix(prefix)).toEqual([]);
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

/** One turn whose model runs `cmd` with exec_command; the command item's output. */
async function turnRunning(threadId: string, cmd: string): Promise<string> {
  mock.enqueue([
    scripts.functionCall(
      "exec_command",
      { cmd, login: false, yield_time_ms: 30_000 },
      { callId: `c${Date.now()}` },
    ),
    scripts.assistantMessage("done"),
  ]);
  const turn = await codex.thread(threadId)!.turn("run it");
  let output: string | null = null;
  for await (const e of turn.stream()) {
    if (e.method === "item/completed" && e.params.item.type === "commandExecution") {
      output = (e.params.item as { aggregatedOutput?: string }).aggregatedOutput ?? "";
    }
  }
  if (output === null)
    throw new Error(
      `no command item; the model saw: ${JSON.stringify(mock.requests().at(-1)?.functionCallOutputs())}`,
    );
  return output;
}

describe("the engine on a container sandbox", () => {
  it("runs the thread's commands inside, through idle stop and replace", async () => {
    sandbox = await backend.create({
      id: "sess-engine",
      limits: limitsForSize("small", { overrides: { diskBytes: 64 * MiB } }),
      network: { mode: "none" },
    });
    await codex.request("environment/add", {
      environmentId: "sess-engine",
      execServerUrl: sandbox.executor.url,
      authBearerToken: sandbox.executor.token,
    });
    const opts: ThreadOptions & { environments: unknown[] } = {
      cwd: "/workspace",
      sandbox: "danger-full-access",
      environments: [{ environmentId: "sess-engine", cwd: "/workspace" }],
    };
    const thread = await codex.startThread(opts);
    const first = await turnRunning(
      thread.id,
      "echo host=$(hostname) uid=$(id -u) > /workspace/a.txt; cat /workspace/a.txt",
    );
    expect(first).toBe("host=sess-engine uid=1000\n");

    await sandbox.stop();
    const afterStop = await turnRunning(thread.id, "cat /workspace/a.txt; echo resumed");
    expect(afterStop).toBe("host=sess-engine uid=1000\nresumed\n");
    expect(sandbox.status()).toBe("running");

    await sandbox.replace();
    const afterReplace = await turnRunning(thread.id, "cat /workspace/a.txt; echo replaced");
    expect(afterReplace).toBe("host=sess-engine uid=1000\nreplaced\n");
  });
});
