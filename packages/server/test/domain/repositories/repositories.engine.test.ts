// Repositories in, branches out, against real git servers on 127.0.0.1 (`git daemon` and smart HTTP behind basic
// auth) with the real engine and the scripted model, through the official npm SDK: clone by branch, tag and commit;
// a private repository with a vault credential the agent never sees; the workspace's changes committed and pushed
// onto a branch after every turn (event, item, webhook data); a push the remote rejects; diffs and patch series;
// ten sessions on one repository sharing one mirror; what is refused.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  commitFiles,
  type GitDaemon,
  type GitHttpServer,
  gitOut,
  makeBareFrom,
  makeRepo,
  startGitDaemon,
  startGitHttpServer,
} from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import type { AgentSessionEvent } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandOutputs, shell } from "../../support/environment-helpers.js";
import { type ServerFixture, startServer, waitFor } from "../../support/fixture.js";
import { sdk } from "../../support/openai-helpers.js";
import { onContainerBackend } from "../../support/sandbox.js";

let f: ServerFixture;
let client: OpenAI;
let root: string;
let daemon: GitDaemon;
let http: GitHttpServer;
const PASSWORD = `pw-${Math.random().toString(36).slice(2)}-secret`;
const BASIC = Buffer.from(`alice:${PASSWORD}`).toString("base64");
const commits: Record<string, string> = {};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "cas-git-"));
  const src = join(root, "src");
  commits.first = await makeRepo(src, { "README.md": "hello repo\n", "src/app.py": "print('v1')\n" });
  await gitOut(src, ["tag", "v1"]);
  commits.second = await commitFiles(src, { "src/app.py": "print('v2')\n" }, "second");
  await gitOut(src, ["checkout", "-q", "-b", "feature"]);
  commits.feature = await commitFiles(src, { "FEATURE.md": "a feature\n" }, "feature work");
  await gitOut(src, ["checkout", "-q", "main"]);
  const served = join(root, "served");
  await makeBareFrom(src, join(served, "public.git"));
  await makeBareFrom(src, join(served, "private.git"));
  await makeBareFrom(src, join(served, "shared.git"));
  daemon = await startGitDaemon({ root: served });
  http = await startGitHttpServer({ root: served, users: { alice: PASSWORD }, private: ["private.git"] });
  f = await startServer({ args: ["--allow-private-targets", "--webhook-allow-http"] });
  client = sdk(f);
});
afterAll(async () => {
  await f?.close();
  await daemon?.close();
  await http?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

type Ev = AgentSessionEvent & Record<string, unknown>;

/** A session with an environment and a first command (streamed create); its id, events and commands' output. */
async function runIn(environment: Record<string, unknown>, cmd: string, extra: Record<string, unknown> = {}) {
  const stream = await client.beta.agents.sessions.create({
    agent: { model: "mock-model" },
    environment: environment as never,
    input: shell(cmd),
    stream: true,
    ...extra,
  });
  const events: Ev[] = [];
  for await (const e of stream) events.push(e as Ev);
  const created = events.find((e) => e.type === "agent.session.created") as
    | { session: { id: string } }
    | undefined;
  const id = created!.session.id;
  return { id, events, output: (await commandOutputs(client, id)).join("\n") };
}

const official = { "openai-beta": "agents=v1" };

async function credential(url: string): Promise<string> {
  const vault = await client.beta.agents.vaults.create({ name: "git" } as never);
  const c = await client.beta.agents.vaults.credentials.create(vault.id, {
    name: "git server",
    auth: { type: "git_http", url, username: "alice", password: PASSWORD } as never,
  });
  return c.id;
}

describe("repositories", () => {
  it("clones by branch, tag and commit (git daemon): the files, the checked-out ref and origin as the agent sees them", async () => {
    const url = daemon.url("public.git");
    const { output, events } = await runIn(
      {
        type: "openai_hosted",
        repositories: [
          { url, ref: "feature", path: "/workspace/by-branch" },
          { url, ref: "v1", path: "/workspace/by-tag" },
          { url, ref: commits.second, path: "/workspace/by-commit" },
          { url, path: "/workspace/default" },
        ],
      },
      [
        "cat by-branch/FEATURE.md by-tag/src/app.py by-commit/src/app.py default/src/app.py",
        "git -C by-branch rev-parse --abbrev-ref HEAD",
        "git -C by-branch rev-parse HEAD",
        "git -C by-tag rev-parse HEAD",
        "git -C by-commit rev-parse HEAD",
        "git -C default status --short --branch",
        "git -C default remote get-url origin",
        "git -C default log --oneline | wc -l",
      ].join("; "),
    );
    expect(events.find((e) => e.type === "agent.session.environment.failed")).toBeUndefined();
    const lines = output.split("\n");
    expect(lines.slice(0, 4)).toEqual(["a feature", "print('v1')", "print('v2')", "print('v2')"]);
    expect(lines[4]).toBe("feature");
    expect(lines[5]).toBe(commits.feature);
    expect(lines[6]).toBe(commits.first);
    expect(lines[7]).toBe(commits.second);
    expect(lines[8]).toBe("## main...origin/main");
    expect(lines[9]).toBe(url);
    expect(lines[10]?.trim()).toBe("2");
  });

  it("a private repository over smart HTTP with a vault credential: cloned, and the secret is nowhere the agent looks", async () => {
    const url = http.url("private.git");
    const cred = await credential(http.url(""));
    const { id, output, events } = await runIn(
      { type: "openai_hosted", repositories: [{ url, credential: cred }] },
      [
        "cat README.md",
        "env",
        "cat /proc/self/environ | tr '\\0' '\\n'",
        "git config -l",
        "grep -rl alice . || echo no-alice",
        "echo changed >> README.md",
      ].join("; "),
    );
    expect(events.find((e) => e.type === "agent.session.environment.failed")).toBeUndefined();
    expect(output).toContain("hello repo");
    expect(output).toContain(`remote.origin.url=${url}`);
    expect(output).toContain("no-alice");
    for (const secret of [PASSWORD, BASIC]) {
      expect(output).not.toContain(secret);
      for (const e of events) expect(JSON.stringify(e)).not.toContain(secret);
    }
    // Nothing of it in the workspace's files either (its .git included), as the host sees them.
    const ws = await f.workspaceOf(id);
    const grep = await gitOut(ws, [
      "grep",
      "--no-index",
      "-l",
      "-I",
      "-e",
      PASSWORD,
      "-e",
      BASIC,
      "--",
      ".",
    ]).catch(() => "");
    expect(grep).toBe("");
    // The server saw the credential on the clone's requests.
    expect(
      http.requests.some((r) => r.path.startsWith("/private.git") && r.authorization === `Basic ${BASIC}`),
    ).toBe(true);
    // Without a credential the same clone fails, with the reason in the environment's status.
    const denied = await runIn({ type: "openai_hosted", repositories: [{ url }] }, "echo never");
    const failed = denied.events.find((e) => e.type === "agent.session.environment.failed") as
      | { environment: { error: { code: string; message: string } } }
      | undefined;
    expect(failed?.environment.error.code).toBe("repository_fetch_failed");
    expect(failed?.environment.error.message).toMatch(/repository 0 .*private\.git/);
  });

  it("pushes a branch after every turn (event, item, webhook data), and serves the diff and the patch series", async () => {
    const url = http.url("public.git");
    const cred = await credential(http.url(""));
    const endpoint = await client.webhooks.create({
      name: "outputs",
      url: "http://127.0.0.1:9/hook",
      event_types: ["agent.session.repository.output" as never],
    });
    const { id, events } = await runIn(
      { type: "openai_hosted", repositories: [{ url, credential: cred, output: { type: "branch" } }] },
      "echo 'print(\"v3\")' > src/app.py; echo new > NEW.txt; mkdir -p outputs; echo report > outputs/r.txt",
    );
    const out = events.find((e) => (e.type as string) === "agent.session.repository.output") as
      | {
          output: {
            branch: string;
            commit: string;
            push: string;
            stats: { files: number };
            base_commit: string;
          };
        }
      | undefined;
    expect(out?.output.push).toBe("pushed");
    expect(out?.output.branch).toBe(`codex/${id}`);
    expect(out?.output.base_commit).toBe(commits.second);
    expect(out?.output.stats.files).toBe(2); // outputs/ is left out
    // It is on the server, as the item says.
    const remote = await gitOut(root, [
      "ls-remote",
      join(root, "served", "public.git"),
      `refs/heads/codex/${id}`,
    ]);
    expect(remote.split("\t")[0]).toBe(out?.output.commit);
    const files = await gitOut(root, [
      `--git-dir=${join(root, "served", "public.git")}`,
      "show",
      "--name-only",
      "--format=%s",
      out!.output.commit,
    ]);
    expect(files.split("\n").slice(1).filter(Boolean).sort()).toEqual(["NEW.txt", "src/app.py"]);
    expect(
      http.requests.some((r) => r.path.includes("git-receive-pack") && r.authorization === `Basic ${BASIC}`),
    ).toBe(true);
    // The item, in the turn.
    const items: Array<Record<string, unknown>> = [];
    for await (const i of client.beta.agents.sessions.items.list(id, { order: "asc" })) {
      items.push(i as unknown as Record<string, unknown>);
    }
    expect(items.find((i) => i.type === "repository_output")?.commit).toBe(out?.output.commit);
    // The webhook event (written with the log event) names it.
    const rows = (await f.service.core.store.listWebhookDeliveries(endpoint.id, { limit: 100 })).data;
    expect(rows.map((d) => [d.event_type, d.data.id, d.data.commit, d.data.push])).toEqual([
      ["agent.session.repository.output", id, out?.output.commit, "pushed"],
    ]);
    // A diff against the base, and the patch series (the pushed commit, then what is not committed yet).
    const ws = await f.workspaceOf(id);
    writeFileSync(join(ws, "LATER.txt"), "later\n");
    const diff = await (
      await f.request("GET", `/v1/agents/sessions/${id}/repositories/0/diff`, undefined, official)
    ).text();
    expect(diff).toContain('+print("v3")');
    expect(diff).toContain("+++ b/NEW.txt");
    expect(diff).toContain("+++ b/LATER.txt");
    const res = await f.request(
      "GET",
      `/v1/agents/sessions/${id}/repositories/0/diff?format=patch`,
      undefined,
      official,
    );
    expect(res.headers.get("content-type")).toContain("application/mbox");
    const patch = await res.text();
    expect(patch.match(/^From [0-9a-f]{40} /gm)).toHaveLength(2);
    expect(patch).toContain("Subject: [PATCH 2/2] Uncommitted changes in the workspace");
    // The list shows the output.
    const list = await f.json<{ data: Array<{ outputs: Array<{ commit: string }> }> }>(
      "GET",
      `/v1/agents/sessions/${id}/repositories`,
      undefined,
      official,
    );
    expect(list.body.data[0]?.outputs.map((o) => o.commit)).toEqual([out?.output.commit]);
  });

  it("a push the remote rejects is a failed item, and the commit is kept", async () => {
    const bare = join(root, "served", "public.git");
    // Someone else's branch of the same name, not based on what the session starts from.
    const other = join(root, "other");
    await makeRepo(other, { "OTHER.md": "not yours\n" });
    await gitOut(other, ["push", "-q", bare, "main:refs/heads/taken"]);
    const { id, events } = await runIn(
      {
        type: "openai_hosted",
        repositories: [{ url: daemon.url("public.git"), output: { type: "branch", branch: "taken" } }],
      },
      "echo mine > MINE.txt",
    );
    const out = events.find((e) => (e.type as string) === "agent.session.repository.output") as
      | { output: { push: string; error: string; commit: string } }
      | undefined;
    expect(out?.output.push).toBe("failed");
    expect(out?.output.error).toMatch(/rejected|fetch first|non-fast-forward/);
    // The remote branch is untouched; the change is still there to diff, and the commit is listed.
    expect((await gitOut(root, ["ls-remote", bare, "refs/heads/taken"])).split("\t")[0]).not.toBe(
      out?.output.commit,
    );
    const diff = await (
      await f.request("GET", `/v1/agents/sessions/${id}/repositories/0/diff`, undefined, official)
    ).text();
    expect(diff).toContain("+++ b/MINE.txt");
    const again = await f.json<{ changed: boolean; output: { push: string } | null }>(
      "POST",
      `/v1/agents/sessions/${id}/repositories/0/outputs`,
      { branch: `retry/${id}` },
      official,
    );
    // Nothing changed since the failed output on "taken"; a new branch starts from the base, so it commits again.
    expect(again.status).toBe(201);
    expect(again.body.output?.push).toBe("pushed");
  });

  it("ten sessions on one repository share one mirror, each workspace with objects of its own", async () => {
    const url = daemon.url("shared.git");
    const mirrors = join(f.config.repositories.dir, "mirrors", "default");
    const before = existsSync(mirrors) ? readdirSync(mirrors).length : 0;
    const runs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        runIn({ type: "openai_hosted", repositories: [{ url, ref: "main" }] }, `cat README.md; echo ${i}`),
      ),
    );
    for (const r of runs) expect(r.output).toContain("hello repo");
    // One more mirror (this URL's), pinned by each of the ten environments.
    expect(readdirSync(mirrors).filter((n) => n.endsWith(".git"))).toHaveLength(before + 1);
    const mirror = f.service.core.repositories.mirrorOf("default", url);
    const pins = await gitOut(root, [
      `--git-dir=${mirror}`,
      "for-each-ref",
      "--format=%(refname)",
      "refs/pins/",
    ]);
    expect(pins.split("\n").filter(Boolean)).toHaveLength(10);
    // Each workspace has objects of its own (a copy, not the mirror's: the agent can write them).
    for (const r of runs) {
      const ws = await f.workspaceOf(r.id);
      expect(existsSync(join(ws, ".git", "objects", "info", "alternates"))).toBe(false);
      expect(await gitOut(ws, ["-c", "safe.directory=*", "rev-parse", "HEAD"])).toBe(commits.second);
    }
  });

  it("a second session on the same repository and commit gets the ready-made clone, which works like any", async () => {
    if (onContainerBackend) return; // (spares are the local backend's: a container's workspace is its own file system)
    const url = http.url("public.git");
    const spares = join(f.config.repositories.dir, "spares");
    const ready = () => (existsSync(spares) ? readdirSync(spares).filter((n) => !n.includes(".")) : []);
    const before = new Set(ready());
    await runIn(
      { type: "openai_hosted", repositories: [{ url, ref: "v1", path: "/workspace/app" }] },
      "true",
    );
    const spare = await waitFor(() => ready().find((n) => !before.has(n)), 60_000);
    const inode = statSync(join(spares, spare ?? "", "tree", ".git")).ino;
    const { id, output, events } = await runIn(
      {
        type: "openai_hosted",
        repositories: [{ url, ref: "v1", path: "/workspace/app", output: { type: "branch", push: false } }],
      },
      "cd app && git status --porcelain --branch && cat src/app.py && git remote get-url origin && echo more >> README.md",
    );
    const ws = await f.workspaceOf(id);
    expect(statSync(join(ws, "app", ".git")).ino).toBe(inode);
    expect(output).toContain(`## HEAD (no branch)\nprint('v1')\n${url}`);
    const out = events.find((e) => (e.type as string) === "agent.session.repository.output") as
      | { output: { base_commit: string; stats: { files: number }; push: string } }
      | undefined;
    expect(out?.output).toMatchObject({
      base_commit: commits.first,
      stats: { files: 1 },
      push: "not_requested",
    });
  });

  it("refuses what it cannot do, with the field and a code", async () => {
    const refuse = async (repositories: unknown[], status: number, code: string | null, param: RegExp) => {
      const res = await f.json<{ error: { code: string | null; param: string | null; message: string } }>(
        "POST",
        "/v1/agents/sessions",
        { agent: { model: "mock-model" }, environment: { type: "openai_hosted", repositories } },
        official,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      if (code) expect(res.body.error.code).toBe(code);
      expect(res.body.error.param ?? "").toMatch(param);
    };
    await refuse(
      [{ url: "git@github.com:org/repo.git" }],
      422,
      "unsupported_repository_url",
      /repositories\[0\]\.url/,
    );
    await refuse([{ url: "ssh://git@example.com/repo" }], 422, "unsupported_repository_url", /url/);
    await refuse([{ url: "/etc" }], 400, "repository_url_refused", /url/);
    await refuse([{ url: "https://u:p@example.com/r.git" }], 400, null, /url/);
    await refuse([{ url: daemon.url("public.git"), ref: "--upload-pack=x" }], 400, null, /ref/);
    await refuse([{ url: daemon.url("public.git"), path: "/workspace/../etc" }], 400, null, /path/);
    await refuse(
      [
        { url: daemon.url("public.git"), path: "/workspace/a" },
        { url: daemon.url("public.git"), path: "/workspace/a/b" },
      ],
      400,
      null,
      /repositories\[1\]\.path/,
    );
    await refuse([{ url: daemon.url("public.git"), credential: "vcrd_nope" }], 404, null, /credential/);
    const cred = await credential("http://127.0.0.1:1/elsewhere/");
    await refuse(
      [{ url: http.url("public.git"), credential: cred }],
      400,
      "credential_url_mismatch",
      /credential/,
    );
    // A ref that does not exist: the environment fails, saying so.
    const missing = await runIn(
      { type: "openai_hosted", repositories: [{ url: daemon.url("public.git"), ref: "nope" }] },
      "echo x",
    );
    const failed = missing.events.find((e) => e.type === "agent.session.environment.failed") as
      | { environment: { error: { code: string } } }
      | undefined;
    expect(failed?.environment.error.code).toBe("repository_ref_not_found");
  });
});

describe("repositories without the operator's flags", () => {
  let plain: ServerFixture;
  beforeAll(async () => {
    plain = await startServer();
  });
  afterAll(async () => {
    await plain?.close();
  });

  it("a loopback remote is refused as a private target, a local path as a path on the server", async () => {
    for (const [url, code] of [
      [daemon.url("public.git"), "repository_url_refused"],
      [http.url("public.git"), "repository_url_refused"],
      ["file:///etc", "repository_url_refused"],
    ] as const) {
      const res = await plain.json<{ error: { code: string; param: string } }>(
        "POST",
        "/v1/agents/sessions",
        { agent: { model: "mock-model" }, environment: { type: "openai_hosted", repositories: [{ url }] } },
        official,
      );
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe(code);
      expect(res.body.error.param).toBe("environment.repositories[0].url");
    }
  });
});
