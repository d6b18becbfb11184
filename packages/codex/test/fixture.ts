import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type CodexHome,
  createCodexHome,
  ev,
  MockResponsesServer,
  scripts,
  type Usage,
} from "@codex-agent-api/testkit";
import { Codex, type CodexOptions, type ThreadItem, type TurnEvent } from "../src/index.js";

export interface Fixture {
  mock: MockResponsesServer;
  home: CodexHome;
  codex: Codex;
  startCodex(opts?: CodexOptions): Promise<Codex>;
  close(): Promise<void>;
}

/** A mock model + isolated CODEX_HOME + a started Codex client (real binary). */
export async function fixture(opts: { codex?: CodexOptions } = {}) {
  const mock = await MockResponsesServer.start({ fallback: null });
  const home = await createCodexHome({ mockUrl: mock.url });
  const clients: Codex[] = [];
  const startCodex = async (extra: CodexOptions = {}) => {
    const c = await Codex.start({ env: home.env, cwd: home.workspace, ...opts.codex, ...extra });
    clients.push(c);
    return c;
  };
  const codex = await startCodex();
  const f: Fixture = {
    mock,
    home,
    codex,
    startCodex,
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await mock.close();
      await home.dispose();
    },
  };
  return f;
}

/**
 * One fixture for a test file, handed to each test clean: its mock reset (no scripts, no requests, no fallback), its
 * workspace empty and no turn running on its engine. A test that breaks it (its engine closed or killed, a turn left
 * running, more clients started) has it closed after the test, and the next test gets a new one. An engine costs
 * ~150 ms of CPU to start: tests that need a fresh one call {@link fixture} themselves.
 */
export function fixturePool() {
  let current: Fixture | null = null;
  let clients = 0;
  return {
    async take(): Promise<Fixture> {
      if (!current) {
        current = await fixture();
        const startCodex = current.startCodex;
        current.startCodex = (opts) => {
          clients++;
          return startCodex(opts);
        };
        clients = 0;
      }
      return current;
    },
    /** After each test: keeps the fixture for the next one if it is clean, else closes it. */
    async release(): Promise<void> {
      if (!current) return;
      if (current.codex.closed || current.codex.activeRoutes > 0 || clients > 0) {
        const broken = current;
        current = null;
        await broken.close();
        return;
      }
      current.mock.reset();
      current.mock.setFallback(null);
      // The engine runs in the workspace: it stays, its contents go.
      const workspace = current.home.workspace;
      await Promise.all(
        (await readdir(workspace)).map((name) => rm(join(workspace, name), { recursive: true, force: true })),
      );
    },
    async close(): Promise<void> {
      await current?.close();
      current = null;
    },
  };
}

export const usage = (i: number, c: number, o: number, r: number, t: number): Usage => ({
  inputTokens: i,
  cachedInputTokens: c,
  outputTokens: o,
  reasoningOutputTokens: r,
  totalTokens: t,
});

/** The three responses of a goal that takes one continuation (the seed's `_enqueue_completed_goal`). */
export function completedGoal(prefix: string, initialText: string, finalText: string) {
  return [
    scripts.sse([
      ev.responseCreated(`${prefix}-initial`),
      ev.assistantMessage(`msg-${prefix}-initial`, initialText),
      ev.completed(`${prefix}-initial`, usage(3, 1, 2, 1, 5)),
    ]),
    scripts.sse([
      ev.responseCreated(`${prefix}-complete-tool`),
      ev.functionCall(`call-${prefix}-complete`, "update_goal", '{"status":"complete"}'),
      ev.completed(`${prefix}-complete-tool`, usage(4, 1, 1, 1, 5)),
    ]),
    scripts.sse([
      ev.responseCreated(`${prefix}-final`),
      ev.assistantMessage(`msg-${prefix}-final`, finalText),
      ev.completed(`${prefix}-final`, usage(5, 0, 3, 0, 8)),
    ]),
  ];
}

export function agentMessages(items: ThreadItem[]): string[] {
  return items.flatMap((i) => (i.type === "agentMessage" ? [i.text] : []));
}

export function streamedMessages(events: TurnEvent[]): string[] {
  return events.flatMap((e) =>
    e.method === "item/completed" && e.params.item.type === "agentMessage" ? [e.params.item.text] : [],
  );
}

/** Joined user-role texts of a request (the seed's `_continuation_text`). */
export const userText = (req: { messageInputTexts(role: "user"): string[] }) =>
  req.messageInputTexts("user").join("\n");
