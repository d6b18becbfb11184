// The web console in Debian's Chromium (playwright-core, never a downloaded browser) against the real service,
// the real Codex engine and the scripted mock model: sign in, stream a command's output, steer, cancel, a goal,
// artifacts (text and image), a dropped connection, and a session of 1000 items. Screenshots go to
// test/screenshots/. The console build (packages/console/dist) is made by vitest's global setup
// (scripts/build-before-tests.ts) whenever its sources are newer than the build.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync, gzipSync } from "node:zlib";
import { ev, scripts } from "@codex-agent-api/testkit";
import OpenAI from "openai";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanup, type ServerFixture, startServer, waitFor } from "../../server/test/support/fixture.js";
import { ensureSandboxImage, removeSandboxes, sandboxRoot } from "../../server/test/support/sandbox.js";
import { WebhookReceiver } from "../../server/test/support/webhook-receiver.js";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "console-test-token";
/** The test's webhook receiver listens on this machine, over plain HTTP: the server must be told to allow that. */
const WEBHOOKS_HERE = ["--webhook-allow-private", "--webhook-allow-http"];
const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "../dist");
const shots = join(here, "screenshots");

let f: ServerFixture;
let browser: Browser;
let page: Page;
const flags: string[] = [];

const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`) });
const api = (method: string, path: string, body?: unknown) =>
  f.json<Record<string, unknown>>(method, path, body, {
    authorization: `Bearer ${TOKEN}`,
    "openai-beta": "agents=v1",
  });

/** The session open in the page (from its URL). */
const openSessionId = () => /\/console\/sessions\/([^/?#]+)/.exec(page.url())?.[1] ?? "";

/** The session's own directory (official-dialect sessions each get one under the workspace root). */
async function workspaceOf(sessionId: string): Promise<string> {
  // Clients see every session's files at /workspace (a self-hosted session's `workspace_directory`); on this host,
  // each official session has its own directory.
  const { body } = await api("GET", `/v1/agents/sessions/${sessionId}`);
  const reported = (body.environment as { workspace_directory?: string }).workspace_directory;
  if (reported !== undefined) expect(reported).toBe("/workspace");
  return join(f.workspace, sessionId);
}

/**
 * A shell command that prints "started", waits for the file `go`, prints three lines, waits for `release`, prints
 * "delta" (each wait ends after a minute at most). Output within the first moments of a command is not streamed
 * as deltas (it is in the final output), so the lines the test watches come after `go`.
 */
const waitingCommand = (go: string, release: string) =>
  `w() { i=0; while [ ! -f "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; }; echo started; w ${go}; printf 'alpha\\nbeta\\ngamma\\n'; w ${release}; echo delta`;

async function release(sessionId: string, flag: string): Promise<void> {
  writeFileSync(join(await workspaceOf(sessionId), flag), "");
}

const composer = () => page.getByRole("form", { name: "composer" });
const message = () => page.getByLabel("Message");
const turnWithStatus = (status: string) => page.locator(`.turn-header[data-turn-status="${status}"]`);
const agentSaid = (text: string) =>
  page.locator('[data-item-type="message"][data-role="assistant"] .text').getByText(text, { exact: true });

async function send(text: string, button = "Send"): Promise<void> {
  await message().fill(text);
  await composer().getByRole("button", { name: button, exact: true }).click();
}

/** A 16×16 RGB PNG (a red/blue checkerboard), made here so the test ships no binary. */
function checkerboardPng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc32 = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const size = 16;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows: number[] = [];
  for (let y = 0; y < size; y++) {
    rows.push(0);
    for (let x = 0; x < size; x++) rows.push(...(((x >> 2) + (y >> 2)) % 2 ? [220, 40, 40] : [40, 80, 220]));
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.from(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install Debian's with \`apt-get update && apt-get install -y chromium\` (these tests never download a browser)`,
    );
  }
  if (!existsSync(join(dist, "index.html"))) {
    throw new Error("The console is not built: run `npm run build` (vitest's global setup normally does it)");
  }
  mkdirSync(shots, { recursive: true });
  f = await startServer({ args: ["--token", TOKEN, ...WEBHOOKS_HERE] });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(30_000);
});

afterAll(async () => {
  // Commands still waiting for their flag end now (the loops are bounded anyway).
  for (const file of flags) if (existsSync(dirname(file))) writeFileSync(file, "");
  await browser?.close();
  await f?.close();
});

describe("web console", () => {
  it("signs in with the server token (a missing or wrong one is refused)", async () => {
    await page.goto(`${f.url}/console/`);
    await page.getByRole("button", { name: "No auth (loopback server without keys)" }).click();
    await page.getByRole("alert").getByText(/401/).waitFor();
    await page.getByLabel("API key or server token").fill("not-the-token");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("alert").getByText(/401/).waitFor();
    await page.getByLabel("API key or server token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Sessions" }).waitFor();
    expect(
      await page.evaluate<string | null>("sessionStorage.getItem('codex-agent-api.console.auth')"),
    ).toContain(TOKEN);
    expect(await page.evaluate<string | null>("localStorage.length")).toBe(0);
  });

  it("creates a session, streams a command's output as it runs, steers the turn, then shows the exit code", async () => {
    await page.getByLabel("Metadata", { exact: true }).first().waitFor();
    await page.getByRole("form", { name: "new session" }).getByLabel("Metadata").fill("suite=console");
    await page.getByRole("button", { name: "New session" }).click();
    await message().waitFor();
    const sid = openSessionId();
    expect(sid).toMatch(/^sess_/);
    const dir = await workspaceOf(sid);
    flags.push(join(dir, "go-1"), join(dir, "release-1"));

    await send(
      `Run this exact shell command and wait for it to finish: ${waitingCommand("go-1", "release-1")}. Then reply with exactly: listed`,
    );
    const running = page.locator('[data-item-type="command_execution"][data-status="in_progress"]');
    await running.waitFor();
    await release(sid, "go-1");
    // The lines are on screen while the command still runs (no exit code yet).
    const output = running.locator("pre.output");
    await output.getByText(/gamma/).waitFor();
    expect(await output.textContent()).toContain("alpha\nbeta\ngamma\n");
    expect(await running.getByTestId("exit-code").count()).toBe(0);
    await shot("command-streaming");

    // A message while the turn runs steers it (the engine hands it to the model after the running command).
    await send("Reply with exactly: steered", "Steer");
    await expect.poll(() => message().inputValue(), { timeout: 30_000 }).toBe(""); // accepted (202): cleared
    expect(await composer().getByRole("alert").count()).toBe(0);
    await release(sid, "release-1");
    await page.locator('[data-role="user"]').getByText("Reply with exactly: steered").waitFor();
    const done = page.locator('[data-item-type="command_execution"][data-status="completed"]');
    await done.getByTestId("exit-code").getByText("exit 0").waitFor();
    expect(await done.locator("pre.output").textContent()).toBe("started\nalpha\nbeta\ngamma\ndelta\n");
    await agentSaid("steered").waitFor();
    await turnWithStatus("completed").first().waitFor();
    await page.locator(".session-head").getByText("idle").waitFor();
    expect(await turnWithStatus("completed").locator(".usage").first().textContent()).toMatch(/\d+ tokens/);
    await shot("steered");
  });

  it("cancels a running turn", async () => {
    const sid = openSessionId();
    flags.push(join(await workspaceOf(sid), "go-2"));
    await send(
      `Run this exact shell command and wait for it to finish: ${waitingCommand("go-2", "go-2")}. Then reply with exactly: never`,
    );
    await page.locator('[data-item-type="command_execution"][data-status="in_progress"]').waitFor();
    await composer().getByRole("button", { name: "Cancel turn" }).click();
    await turnWithStatus("cancelled").waitFor();
    await page.locator(".session-head").getByText("idle").waitFor();
    expect(await agentSaid("never").count()).toBe(0);
    await shot("cancelled");
  });

  it("lists the session with its status and finds it by metadata", async () => {
    const sid = openSessionId();
    await page.getByRole("link", { name: "Sessions" }).click();
    await page.getByLabel("Metadata", { exact: true }).last().fill("suite=console");
    const row = page.locator(`tr[data-session-id="${sid}"]`);
    await row.getByText("idle").waitFor();
    await page.getByLabel("Status").selectOption("in_progress");
    await row.waitFor({ state: "detached" });
    await page.getByLabel("Status").selectOption("all");
    await page.getByLabel("Metadata", { exact: true }).last().fill("suite=other");
    await row.waitFor({ state: "detached" });
    await page.getByLabel("Metadata", { exact: true }).last().fill("");
    await row.getByRole("link").click();
    await message().waitFor();
    expect(openSessionId()).toBe(sid);
  });

  it("runs a goal and shows its progress against the caps, and resumes it with a higher cap", async () => {
    await page.getByLabel("Start as a goal").check();
    await composer().getByLabel("Max turns").fill("2");
    await send("Write the release notes and keep the goal active", "Start goal");
    const goal = page.getByRole("region", { name: "goal" });
    await goal
      .getByTestId("goal-objective")
      .getByText("Write the release notes and keep the goal active")
      .waitFor();
    // The server pauses the goal when the continuation that reaches max_turns starts.
    await goal.getByTestId("goal-reason").getByText("max_turns").waitFor();
    expect(await goal.locator("[data-status]").first().getAttribute("data-status")).toBe("paused");
    expect(await goal.getByTestId("goal-turns").textContent()).toBe("2 / 2");
    expect(await goal.getByTestId("goal-tokens").textContent()).toMatch(/^[1-9]\d* \/ \d+$/);
    await page.locator(".session-head").getByText("idle").waitFor();
    await shot("goal");

    await goal.getByLabel("Max turns").fill("3");
    await goal.getByRole("button", { name: "Resume" }).click();
    await goal.getByTestId("goal-turns").getByText("3 / 3").waitFor();
    await goal.getByTestId("goal-reason").getByText("max_turns").waitFor();
    await page.locator(".session-head").getByText("idle").waitFor();
  });

  it("opens artifacts: previews a text file and an image from blobs, offers them for download", async () => {
    const png = checkerboardPng().toString("base64");
    await send(
      `Run this exact shell command and wait for it to finish: printf 'hello from the agent\\n' > notes.txt && echo '${png}' | base64 -d > dot.png. Then reply with exactly: files made`,
    );
    await agentSaid("files made").waitFor();
    const panel = page.getByRole("region", { name: "artifacts" });
    const before = page.url();

    await panel.getByRole("button", { name: "notes.txt" }).click();
    const preview = panel.getByTestId("artifact-preview");
    await preview.locator("pre").getByText("hello from the agent").waitFor();
    expect(await preview.getByRole("link", { name: "Download" }).getAttribute("href")).toMatch(/^blob:/);
    await shot("artifact-text");

    await panel.getByRole("button", { name: "dot.png" }).click();
    const img = preview.getByRole("img", { name: "dot.png" });
    await img.waitFor();
    expect(await img.getAttribute("src")).toMatch(/^blob:/);
    await waitFor(
      () => img.evaluate((el) => (el as { naturalWidth: number }).naturalWidth === 16),
      10_000,
      "the image",
    );
    const download = page.waitForEvent("download");
    await preview.getByRole("link", { name: "Download" }).click();
    expect((await download).suggestedFilename()).toBe("dot.png");
    expect(page.url()).toBe(before); // the page never navigated to the content URL
    await shot("artifact-image");
  });

  it("clears the goal", async () => {
    const goal = page.getByRole("region", { name: "goal" });
    await goal.getByRole("button", { name: "Clear" }).click();
    await goal.getByText("No goal.").waitFor();
  });

  it("shows the engines and the turns running now", async () => {
    const sid = openSessionId();
    await page.getByRole("link", { name: "Engines" }).click();
    await page.getByTestId("health-status").getByText("ok").waitFor();
    await page.getByRole("table", { name: "engines" }).getByText("running").waitFor();
    expect(Number(await page.getByTestId("active-turns").textContent())).toBe(0);
    // This server's sessions run on the local backend (the container backend's counts: /health, /metrics).
    expect(await page.getByTestId("sandbox-backend").textContent()).toMatch(/^Local backend/);
    await page.goBack();
    await message().waitFor();
    expect(openSessionId()).toBe(sid);
  });

  it("edits agents: creates one and updates its model, name and instructions", async () => {
    await page.getByRole("link", { name: "Agents" }).click();
    const editor = page.getByRole("form", { name: "agent editor" });
    await editor.getByLabel("Model").fill("mock-model");
    await editor.getByLabel("Name").fill("Reviewer");
    await editor.getByLabel("Instructions").fill("Review the diff.");
    await editor.getByRole("button", { name: "Create" }).click();
    await editor.getByText("Saved.").waitFor();
    const list = page.getByRole("table", { name: "agents" });
    await list.getByRole("button", { name: "Reviewer" }).click();
    await editor.getByLabel("Name").fill("Strict reviewer");
    await editor.getByRole("button", { name: "Save" }).click();
    await list.getByRole("button", { name: "Strict reviewer" }).waitFor();
    const { body } = await api("GET", "/v1/agents");
    const agents = body.data as Array<{ name: string; instructions: string; model: string }>;
    expect(agents.find((a) => a.name === "Strict reviewer")).toMatchObject({
      model: "mock-model",
      instructions: "Review the diff.",
    });
    await page.goBack();
    await message().waitFor();
  });

  it("answers a tool call, shows a file change with its diff, and approves a command", async () => {
    const back = page.url();
    // A session whose agent has a function tool: the person at the console answers for the client.
    const tooled = await api("POST", "/v1/agents/sessions", {
      environment: { type: "none" },
      agent: {
        model: "mock-model",
        tools: [
          {
            type: "function",
            name: "get_weather",
            description: "The weather in a city.",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        ],
      },
    });
    const sid = tooled.body.id as string;
    await page.goto(`${f.url}/console/sessions/${sid}`);
    await send('Call the function get_weather with arguments {"city":"Paris"}. Then reply with its output');
    const call = page.getByRole("form", { name: "tool call get_weather" });
    await call.waitFor();
    await page.locator(".session-head").getByText("requires action").waitFor();
    expect(await call.locator("pre.args").textContent()).toContain('"city": "Paris"');
    await call.getByLabel("Result").fill("Sunny in Paris");
    await shot("tool-call");
    await call.getByRole("button", { name: "Send result" }).click();
    await agentSaid("Sunny in Paris").waitFor();
    await call.waitFor({ state: "detached" });
    await page.locator('[data-item-type="function_call_output"]').getByText("Sunny in Paris").waitFor();

    // File changes (the engine's apply_patch, here run through the shell) show each file's diff.
    const patch = (body: string) =>
      scripts.functionCall("exec_command", {
        cmd: `apply_patch <<'EOF'\n*** Begin Patch\n${body}*** End Patch\nEOF\n`,
        login: false,
        yield_time_ms: 30_000,
      });
    f.mock.enqueue(
      [
        patch("*** Add File: notes.txt\n+first line\n+second line\n"),
        scripts.assistantMessage("added"),
        patch("*** Update File: notes.txt\n@@\n first line\n-second line\n+second line, edited\n"),
        scripts.assistantMessage("edited"),
      ],
      (req) => (req.lastUserText() ?? "").startsWith("Write the notes"),
    );
    await send("Write the notes");
    await agentSaid("added").waitFor();
    await page.locator(".session-head").getByText("idle").waitFor();
    await send("Write the notes again");
    await agentSaid("edited").waitFor();
    const changes = page.locator('[data-item-type="file_change"]');
    await expect.poll(() => changes.count(), { timeout: 30_000 }).toBe(2);
    const added = changes.first().getByTestId("diff");
    expect(await added.locator(".diff-add").allTextContents()).toEqual(["+first line\n", "+second line\n"]);
    const edited = changes.last().getByTestId("diff");
    expect(await edited.locator(".diff-del").allTextContents()).toEqual(["-second line\n"]);
    expect(await edited.locator(".diff-add").allTextContents()).toEqual(["+second line, edited\n"]);
    expect(await changes.last().textContent()).toContain("update");
    expect(readFileSync(join(await workspaceOf(sid), "notes.txt"), "utf8")).toBe(
      "first line\nsecond line, edited\n",
    );
    await changes.last().scrollIntoViewIfNeeded();
    await shot("file-change");

    // What the last turn changed (its checkpoints), undone, the undo undone, then a fork from its end.
    const notes = async (id: string) => readFileSync(join(await workspaceOf(id), "notes.txt"), "utf8");
    const turns = await api("GET", `/v1/agents/sessions/${sid}/turns?order=desc&limit=1`);
    const lastTurn = (turns.body.data as Array<{ id: string }>)[0]!.id;
    await page
      .locator(`.turn-header[data-turn-id="${lastTurn}"]`)
      .getByRole("button", { name: "Changes" })
      .click();
    const panel = page.getByRole("region", { name: "turn changes" });
    await panel.getByTestId("turn-stats").getByText("1 file, +1 −1").waitFor();
    expect(await panel.locator('.changed-files li[data-status="modified"]').textContent()).toContain(
      "notes.txt",
    );
    expect(await panel.locator(".diff-del").allTextContents()).toEqual(["-second line\n"]);
    expect(await panel.locator(".diff-add").allTextContents()).toEqual(["+second line, edited\n"]);
    await shot("turn-changes");
    await panel.getByRole("button", { name: "Undo this turn" }).click();
    await panel.locator("output.restored").getByText("Restored: 1 file changed.").waitFor();
    expect(await notes(sid)).toBe("first line\nsecond line\n");
    await panel.getByRole("button", { name: "Undo the restore" }).click();
    await expect.poll(() => notes(sid), { timeout: 30_000 }).toBe("first line\nsecond line, edited\n");
    await panel.getByRole("button", { name: "Fork from here" }).click();
    await expect.poll(openSessionId, { timeout: 60_000 }).not.toBe(sid);
    const fork = openSessionId();
    expect(fork).toMatch(/^sess_/);
    await message().waitFor();
    expect(await notes(fork)).toBe("first line\nsecond line, edited\n");

    // A session that asks before running commands: the command waits until someone approves it.
    const guarded = await api("POST", "/v1/agents/sessions", {
      environment: { type: "none" },
      agent: { model: "mock-model", approval_policy: "untrusted" },
    });
    const gid = guarded.body.id as string;
    await page.goto(`${f.url}/console/sessions/${gid}`);
    await send(
      "Run this exact shell command and wait for it to finish: touch approved.txt. Then reply with exactly: made it",
    );
    const approval = page.getByRole("group", { name: "approval command_execution" });
    await approval.waitFor();
    expect(await approval.textContent()).toContain("touch approved.txt");
    expect(existsSync(join(await workspaceOf(gid), "approved.txt"))).toBe(false);
    await shot("approval");
    await approval.getByRole("button", { name: "Approve", exact: true }).click();
    await agentSaid("made it").waitFor();
    await approval.waitFor({ state: "detached" });
    expect(existsSync(join(await workspaceOf(gid), "approved.txt"))).toBe(true);

    await page.goto(back);
    await message().waitFor();
  });

  it("webhooks: creates an endpoint (its secret shown once), lists its deliveries, sends a test event", async () => {
    const back = page.url();
    const receiver = await WebhookReceiver.start();
    try {
      await page.getByRole("link", { name: "Webhooks" }).click();
      const form = page.getByRole("form", { name: "new webhook endpoint" });
      await form.getByLabel("Name").fill("ops");
      await form.getByLabel("URL").fill(receiver.urlOf("/ops"));
      await form.getByLabel("agent.session.idle").check();
      await form.getByRole("button", { name: "Create endpoint" }).click();
      const secret = (await page.getByTestId("signing-secret").textContent()) ?? "";
      expect(secret).toMatch(/^whsec_/);

      // A session's turn ends: its idle event is delivered, verified with the official SDK, and listed.
      const created = await api("POST", "/v1/agents/sessions", {
        environment: { type: "none" },
        input: "Reply with exactly: hooked",
      });
      const sid = created.body.id as string;
      const panel = page.getByRole("region", { name: "endpoint ops" });
      await panel
        .locator('tr[data-event-type="agent.session.idle"][data-status="delivered"]')
        .filter({ hasText: sid })
        .waitFor({ timeout: 60_000 });
      const got = receiver
        .at("/ops")
        .find((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === sid);
      const event = await new OpenAI({ apiKey: "unused" }).webhooks.unwrap(got!.body, got!.headers, secret);
      expect(event).toMatchObject({ type: "agent.session.idle", data: { id: sid } });

      await panel.getByRole("button", { name: "Send test event" }).click();
      await panel.locator("output.note").getByText("Test event agent.session.idle: answered 200").waitFor();
      await shot("webhooks");
      await panel.getByRole("button", { name: "Delete" }).click();
      await page
        .getByRole("table", { name: "webhook endpoints" })
        .getByRole("button", { name: "ops", exact: true })
        .waitFor({ state: "detached" });
    } finally {
      await receiver.close();
    }
    await page.goto(back);
    await message().waitFor();
  });

  it("reconnects after the server went away and resumes after the last event, without duplicates", async () => {
    const sid = openSessionId();
    const port = new URL(f.url).port;
    const dataDir = f.dataDir;
    const resumedFrom: string[] = [];
    // The page's first connection (no Last-Event-ID yet) is up before the server goes: only the attempts made after
    // that are reconnections.
    await page.getByTestId("connection").getByText(/^live/).waitFor();
    page.on("request", (r) => {
      if (r.method() === "GET" && r.url().endsWith(`/v1/agents/sessions/${sid}/events`)) {
        resumedFrom.push(r.headers()["last-event-id"] ?? "");
      }
    });
    await f.close({ keepData: true });
    await page
      .getByTestId("connection")
      .getByText(/reconnecting/)
      .waitFor();
    f = await startServer({ dataDir, args: ["--token", TOKEN, "--port", port, ...WEBHOOKS_HERE] });
    const connection = page.getByTestId("connection");
    await connection.getByText(/^live/).waitFor();
    expect(Number(await connection.getAttribute("data-reconnects"))).toBeGreaterThan(0);
    // Every new attempt asked to resume after the last event the page had (its event_id).
    expect(resumedFrom.length).toBeGreaterThan(0);
    for (const id of resumedFrom) expect(id).toMatch(new RegExp(`^evt_${sid.slice(5)}_\\d+_(\\d+|state)$`));
    // A turn started by someone else (this test, through the API) shows up live, once.
    const sent = await f.request(
      "POST",
      `/v1/agents/sessions/${sid}/events`,
      { events: [messageEvent("back again")] },
      { authorization: `Bearer ${TOKEN}`, "openai-beta": "agents=v1" },
    );
    expect(sent.status).toBe(202);
    await agentSaid("back again").waitFor();
    await page.locator(".session-head").getByText("idle").waitFor();
    expect(await agentSaid("back again").count()).toBe(1);
    expect(await agentSaid("steered").count()).toBe(1);
    await shot("reconnected");
    // The restarted fixture got the data dir from us: it is ours to remove.
    const restarted = f;
    const close = restarted.close.bind(restarted);
    restarted.close = async (o) => {
      await close(o);
      cleanup(dataDir);
    };
  });

  it("measures: the bundle (gzip) and the first paint of a session with 1000 items", async () => {
    const assets = readdirSync(join(dist, "assets"));
    const gz = (ext: string) =>
      assets
        .filter((a) => a.endsWith(ext))
        .reduce((sum, a) => sum + gzipSync(readFileSync(join(dist, "assets", a))).length, 0);
    const bundle = { js_gzip_bytes: gz(".js"), css_gzip_bytes: gz(".css") };

    // One turn whose single model response holds 999 messages: with the user's message, 1000 items.
    const SEED = "Seed a long session";
    const count = 999;
    f.mock.enqueue(
      scripts.sse([
        ev.responseCreated("seed"),
        ...Array.from({ length: count }, (_, i) =>
          ev.assistantMessage(`msg-seed-${i + 1}`, `seed message ${i + 1}`),
        ),
        ev.completed("seed"),
      ]),
      (req) => req.lastUserText() === SEED,
    );
    const created = await api("POST", "/v1/agents/sessions", { environment: { type: "none" }, input: SEED });
    const sid = created.body.id as string;
    // The seeding turn ends (any way: a failed one says why here rather than after the test's time is up).
    const seeded = (await waitFor(
      async () => {
        const body = (await api("GET", `/v1/agents/sessions/${sid}`)).body;
        return body.status === "in_progress" ? null : body;
      },
      60_000,
      "the seeding turn to end",
    ))!;
    expect(seeded.status, JSON.stringify(seeded)).toBe("idle");

    await page.goto(`${f.url}/console/sessions/${sid}`);
    await agentSaid("seed message 999").waitFor();
    // Marked by the timeline when its first rows are committed (ms since navigation start).
    const sessionPaintMs = await page.evaluate<number>(
      "performance.getEntriesByName('console:timeline-rows')[0]?.startTime ?? -1",
    );
    const fcpMs = await page.evaluate<number>(
      "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1",
    );
    const renderedRows = await page.locator(".timeline .row").count();
    expect(renderedRows).toBeLessThan(100); // virtualised: the DOM holds what is on screen, not 1000 rows
    await shot("long-session");

    // Older pages load on scrolling up, down to the first message.
    const timeline = page.getByTestId("timeline");
    await expect
      .poll(
        async () => {
          await timeline.evaluate((el) => {
            (el as { scrollTop: number }).scrollTop = 0;
          });
          return agentSaid("seed message 1").count();
        },
        { timeout: 60_000, interval: 100 },
      )
      .toBe(1);
    await shot("long-session-top");

    const metrics = {
      ...bundle,
      fcp_ms: Math.round(fcpMs),
      session_1000_items_paint_ms: Math.round(sessionPaintMs),
      rendered_rows: renderedRows,
    };
    writeFileSync(join(shots, "metrics.json"), `${JSON.stringify(metrics, null, 2)}\n`);
    console.log(`[console metrics] ${JSON.stringify(metrics)}`);
    // Its waits are bounded one by one (seeding 60 s, first paint 30 s, scrolling to the top 60 s): each reports
    // what it waited for, rather than the test's overall timeout.
  }, 180_000);
});

describe("web console without auth", () => {
  it("signs in with 'no auth' on a loopback server without keys, and signs out", async () => {
    const open = await startServer();
    const p = await browser.newPage();
    try {
      await p.goto(`${open.url}/console/`);
      await p.getByRole("button", { name: "No auth (loopback server without keys)" }).click();
      await p.getByRole("heading", { name: "Sessions" }).waitFor();
      await p.getByRole("link", { name: "Engines" }).click();
      await p.getByTestId("health-status").getByText("ok").waitFor();
      await p.getByRole("button", { name: "Sign out" }).click();
      await p.getByLabel("API key or server token").waitFor();
      expect(await p.evaluate<number>("sessionStorage.length")).toBe(0);
    } finally {
      await p.close();
      await open.close();
    }
  });

  it("shows the container backend's sandboxes: the warm pool, those in use", async () => {
    await ensureSandboxImage();
    const root = sandboxRoot("console");
    const boxed = await startServer({
      args: [
        "--sandbox-backend",
        "container",
        "--sandbox-dir",
        root,
        "--sandbox-warm",
        "1",
        "--sandbox-disk",
        "256",
      ],
    });
    const p = await browser.newPage();
    try {
      await p.goto(`${boxed.url}/console/`);
      await p.getByRole("button", { name: "No auth (loopback server without keys)" }).click();
      await p.getByRole("link", { name: "Engines" }).click();
      const table = p.getByRole("table", { name: "sandboxes" });
      // The pool fills in the background (first "being made", then warm); the page polls /health.
      const cells = () => table.locator("tbody td").allTextContents();
      await waitFor(
        async () => (await cells()).join(" ") === "1 0 0 0",
        60_000,
        "one warm sandbox on the page",
      );
      expect(await cells()).toEqual(["1", "0", "0", "0"]);
    } finally {
      await p.close();
      await boxed.close();
      await removeSandboxes(root);
    }
  }, 120_000);
});

function messageEvent(text: string) {
  return {
    type: "agent.session.input.message",
    input: [{ role: "user", content: [{ type: "input_text", text: `Reply with exactly: ${text}` }] }],
  };
}
