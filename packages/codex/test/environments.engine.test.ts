// Execution environments: a thread whose commands run on an execution server (`codex exec-server`) the engine
// process was given with `addEnvironment`, here a second process on this host with a capability token. The command's
// parent is that server, not the app-server.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { resolveCodexBinary, type ThreadItem } from "../src/index.js";
import { type Fixture, fixture } from "./fixture.js";

let f: Fixture;
let server: ReturnType<typeof spawn>;
let url: string;
const dir = mkdtempSync(join(tmpdir(), "codex-env-"));
const token = "t0ken-0123456789abcdef";

beforeAll(async () => {
  f = await fixture();
  writeFileSync(join(dir, "token"), `${token}\n`);
  server = spawn(
    resolveCodexBinary(),
    [
      "exec-server",
      "--listen",
      "ws://127.0.0.1:0",
      "--ws-auth",
      "capability-token",
      "--ws-token-file",
      join(dir, "token"),
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir } },
  );
  url = await new Promise<string>((resolve, reject) => {
    let out = "";
    server.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /ws:\/\/127\.0\.0\.1:\d+/.exec(out);
      if (m) resolve(m[0]);
    });
    server.once("exit", (code) => reject(new Error(`exec-server exited ${code}: ${out}`)));
  });
});

afterAll(async () => {
  await f?.close();
  server?.kill();
  rmSync(dir, { recursive: true, force: true });
});

it("runs a thread's commands on the execution server it names", async () => {
  await f.codex.addEnvironment({ environmentId: "elsewhere", execServerUrl: url, authBearerToken: token });
  const thread = await f.codex.startThread({
    cwd: dir,
    sandbox: "danger-full-access",
    environments: [{ environmentId: "elsewhere", cwd: dir }],
  });
  f.mock.enqueue([
    scripts.functionCall("exec_command", { cmd: "cat /proc/$PPID/cmdline | tr '\\0' ' '; echo > made.txt" }),
    scripts.assistantMessage("done"),
  ]);
  const items: ThreadItem[] = [];
  const turn = await thread.turn("go");
  for await (const e of turn.stream()) if (e.method === "item/completed") items.push(e.params.item);
  const command = items.find((i) => i.type === "commandExecution") as
    | { aggregatedOutput?: string }
    | undefined;
  expect(command?.aggregatedOutput).toMatch(/exec-server --listen ws:\/\/127\.0\.0\.1:0/);
  expect(readFileSync(join(dir, "made.txt"), "utf8")).toBe("\n");
});
