// One instance per data directory (two real CLI processes), and /health reporting engines that cannot reach
// their model.
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processesUsing } from "@codex-agent-api/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type CliServer, runCliToExit, startCliServer } from "../support/cli-process.js";
import { cleanup, waitFor } from "../support/fixture.js";

const running: CliServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) {
    p.child.kill("SIGKILL");
    await p.exited;
  }
  for (const d of dirs.splice(0)) {
    await waitFor(() => processesUsing(d).length === 0, 15_000, "the servers' engines to exit");
    cleanup(d);
  }
});

function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), "cas-lock-"));
  dirs.push(d);
  return d;
}

async function start(dataDir: string, opts: { modelUrl?: string } = {}): Promise<CliServer> {
  const p = await startCliServer(dataDir, [], {}, opts);
  running.push(p);
  return p;
}

async function turn(
  url: string,
  text: string,
): Promise<{ status: string; output: Array<{ item: { text?: string } }> }> {
  const res = await fetch(`${url}/v1/agents/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input: `Reply with exactly: ${text}`, stream: false }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; output: Array<{ item: { text?: string } }> };
}

/** The files of a directory tree with their size and modification time. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = statSync(p);
        out[p.slice(dir.length)] = `${st.size}:${st.mtimeMs}`;
      }
    }
  };
  walk(dir);
  return out;
}

describe("one instance per data directory", () => {
  it("a second instance exits before touching anything, naming the holder; after a SIGKILL the next start succeeds", async () => {
    const dataDir = scratch();
    const first = await start(dataDir);
    const config = join(dataDir, "codex-home", "config.toml");
    const before = readFileSync(config, "utf8");
    const configStat = statSync(config).mtimeMs;
    // What the first instance has written and does not touch while idle (its engine's own state aside).
    const kept = Object.fromEntries(
      Object.entries(tree(dataDir)).filter(
        ([p]) => !p.startsWith("/codex-home/") || p === "/codex-home/config.toml",
      ),
    );

    const second = await runCliToExit(["--mock-model", "--port", "0", "--data-dir", dataDir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `The data directory ${dataDir} is in use by another codex-agent-api instance`,
    );
    expect(second.stderr).toContain(`pid ${first.pid}`);
    expect(second.stderr).not.toMatch(/at .*\.js:\d+/); // a message, not a stack trace
    expect(second.stdout).not.toContain("listening");
    // Nothing changed: the engine's configuration still names the first instance's model.
    expect(readFileSync(config, "utf8")).toBe(before);
    expect(statSync(config).mtimeMs).toBe(configStat);
    for (const [path, stat] of Object.entries(kept)) {
      if (!/agents\.db/.test(path)) expect(tree(dataDir)[path], path).toBe(stat);
    }
    // The first instance is unharmed.
    const still = await turn(first.url, "still mine");
    expect(still.status).toBe("idle");
    expect(still.output.map((o) => o.item.text)).toContain("still mine");

    // Killed without a chance to clean up: the lock went with it.
    first.child.kill("SIGKILL");
    await first.exited;
    const next = await start(dataDir);
    expect(JSON.parse(readFileSync(join(dataDir, "instance.json"), "utf8"))).toMatchObject({ pid: next.pid });
    const again = await turn(next.url, "taken over");
    expect(again.output.map((o) => o.item.text)).toContain("taken over");
    next.child.kill("SIGTERM");
    expect(await next.exited).toEqual({ code: 0, signal: null });
    running.splice(running.indexOf(next), 1);
    expect(readdirSync(dataDir)).not.toContain("instance.json");
  });
});

/** A port nothing listens on (bound once, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Health {
  status: string;
  model: { reachable: boolean | null; reason: string | null; since: number | null };
}

describe("/health and the model", () => {
  it("reports a model that cannot be connected to: degraded (200), why and since when, never its URL", async () => {
    const port = await closedPort();
    const server = await start(scratch(), { modelUrl: `http://127.0.0.1:${port}/v1` });
    const health = async () => {
      const res = await fetch(`${server.url}/health`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).not.toContain(String(port));
      return JSON.parse(text) as Health;
    };
    // The probe (a TCP connection to the model's host and port) finds it closed.
    const probed = (await waitFor(
      async () => {
        const h = await health();
        return h.model.reachable === false ? h : null;
      },
      15_000,
      "the probe to fail",
    ))!;
    expect(probed.status).toBe("degraded");
    expect(probed.model.reason).toMatch(/cannot be connected to \(ECONNREFUSED\)/);
    expect(probed.model.since).toBeGreaterThan(0);

    // A turn: the engine reports that it cannot connect (and retries; the turn stays in progress).
    const reply = fetch(`${server.url}/v1/agents/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "hello?", stream: false }),
    });
    const seen = (await waitFor(
      async () => {
        const h = await health();
        return h.model.reason?.includes("the engine cannot connect to the model") ? h : null;
      },
      30_000,
      "the engine to report it",
    ))!;
    expect(seen.status).toBe("degraded");
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    running.splice(running.indexOf(server), 1);
    // The waiting turn was ended by the shutdown, and answered.
    const answered = await reply;
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ status: "idle" });
  });

  it("says ok with a model it reaches", async () => {
    const server = await start(scratch());
    const h = await waitFor(
      async () => {
        const body = (await (await fetch(`${server.url}/health`)).json()) as Health;
        return body.model.reachable !== null ? body : null;
      },
      15_000,
      "the first probe",
    );
    expect(h).toMatchObject({ status: "ok", model: { reachable: true, reason: null, since: null } });
  });
});
