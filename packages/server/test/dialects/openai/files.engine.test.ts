// The Files API (`client.files.*`) through the official `openai` SDK, unchanged: uploads (multipart, streamed to
// disk, size-limited, leaving nothing behind when refused or interrupted), retrieve, list, content, delete,
// waitForProcessing, expiry, projects; and `file_id` references where the official API takes them: environment
// files (`environments.files.upload()` / `prepare()`), inline environments, templates.
import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import OpenAI, {
  type APIError,
  BadRequestError,
  NotFoundError,
  toFile,
  UnprocessableEntityError,
} from "openai";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config/load.js";
import { Provisioner } from "../../../src/domain/environments/provision.js";
import { NO_NETWORK } from "../../../src/domain/environments/spec.js";
import { FileStorage } from "../../../src/domain/files/storage.js";
import { TestClock } from "../../support/clock.js";
import { cleanup, type ServerFixture, startServer, stubEngines, waitFor } from "../../support/fixture.js";
import { expectApiError, rejection, sdk } from "../../support/openai-helpers.js";

const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const b64 = (s: string) => Buffer.from(s).toString("base64");

/** Temporary files of uploads in progress (or left behind). */
const incoming = (f: ServerFixture) => {
  const dir = join(f.config.files.dir, ".incoming");
  return existsSync(dir) ? readdirSync(dir) : [];
};

/** Every content file the server keeps, of every project. */
const stored = (f: ServerFixture) =>
  existsSync(f.config.files.dir)
    ? readdirSync(f.config.files.dir)
        .filter((d) => d !== ".incoming")
        .flatMap((d) => readdirSync(join(f.config.files.dir, d)))
    : [];

async function all<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of pages) out.push(x);
  return out;
}

/** A multipart body by hand: the file part first (as the npm SDK sends it), then the fields. */
function form(
  boundary: string,
  file: Buffer,
  fields: Record<string, string>,
  filename = "data.bin",
): { head: Buffer; tail: Buffer } {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n",
  );
  let rest = "\r\n";
  for (const [k, v] of Object.entries(fields)) {
    rest += `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  }
  rest += `--${boundary}--\r\n`;
  return { head: Buffer.concat([head, file]), tail: Buffer.from(rest) };
}

/** An HTTP/1.1 request over a raw socket, written in pieces the test controls. */
function rawUpload(f: ServerFixture, contentLength: number, boundary: string) {
  const url = new URL(f.url);
  const socket = connect(Number(url.port), url.hostname);
  let response = "";
  socket.on("data", (d) => {
    response += d.toString();
  });
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  socket.on("error", () => undefined);
  socket.write(
    `POST /v1/files HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer test\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${contentLength}\r\n\r\n`,
  );
  return { socket, closed, response: () => response };
}

describe("the Files API through the official SDK", () => {
  let f: ServerFixture;
  let client: OpenAI;
  beforeAll(async () => {
    f = await startServer({ args: ["--file-size-limit", String(64 * 1024)] });
    client = sdk(f);
  });
  afterAll(async () => {
    await f.close();
  });

  it("create, retrieve, list (pages, order, purpose), content, waitForProcessing, delete", async () => {
    const bytes = randomBytes(5000);
    const created = await client.files.create({
      file: await toFile(bytes, "notes & data (v1).bin"),
      purpose: "user_data",
    });
    expect(created).toEqual({
      id: expect.stringMatching(/^file-[A-Za-z0-9]+$/),
      object: "file",
      bytes: 5000,
      created_at: expect.any(Number),
      expires_at: null,
      filename: "notes & data (v1).bin",
      purpose: "user_data",
      status: "processed",
      status_details: null,
    });
    expect(Math.abs(created.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(await client.files.retrieve(created.id)).toEqual(created);
    expect(await client.files.waitForProcessing(created.id, { pollInterval: 10 })).toEqual(created);

    const content = await client.files.content(created.id);
    expect(content.headers.get("content-type")).toBe("application/octet-stream");
    expect(content.headers.get("content-disposition")).toMatch(
      /^attachment; filename="notes & data \(v1\)\.bin"/,
    );
    expect(content.headers.get("x-content-type-options")).toBe("nosniff");
    expect(sha(Buffer.from(await content.arrayBuffer()))).toBe(sha(bytes));

    const more = [];
    for (const [i, purpose] of (["assistants", "vision", "evals"] as const).entries()) {
      more.push(
        await client.files.create({ file: await toFile(Buffer.from(`#${i}`), `f${i}.txt`), purpose }),
      );
    }
    const ids = [created, ...more].map((x) => x.id);
    // Newest first by default; the SDK follows the cursor (`after`) through pages of one.
    expect((await all(client.files.list({ limit: 1 }))).map((x) => x.id)).toEqual([...ids].reverse());
    expect((await all(client.files.list({ order: "asc" }))).map((x) => x.id)).toEqual(ids);
    const page = await client.files.list({ limit: 2 });
    expect(page.data.map((x) => x.id)).toEqual([ids[3], ids[2]]);
    expect(page.has_more).toBe(true);
    expect((await all(client.files.list({ purpose: "vision" }))).map((x) => x.id)).toEqual([more[1]!.id]);
    expect(await all(client.files.list({ purpose: "batch_output" }))).toEqual([]);

    expect(await client.files.delete(created.id)).toEqual({ id: created.id, object: "file", deleted: true });
    expectApiError(await rejection(client.files.retrieve(created.id)), NotFoundError, 404);
    expectApiError(await rejection(client.files.content(created.id)), NotFoundError, 404);
    expectApiError(await rejection(client.files.delete(created.id)), NotFoundError, 404);
    expect((await all(client.files.list())).map((x) => x.id)).not.toContain(created.id);
    expect(stored(f)).not.toContain(created.id);
    for (const x of more) await client.files.delete(x.id);
  });

  it("answers in the official shapes although the SDK's Files API methods send no OpenAI-Beta header", async () => {
    const e = expectApiError(await rejection(client.files.retrieve("file-nothere")), NotFoundError, 404);
    expect(e.error).toEqual({
      message: "No such File object: file-nothere",
      type: "not_found_error",
      param: "file_id",
      code: "not_found",
    });
    // The same without any SDK: no header at all.
    const raw = await f.json("GET", "/v1/files/file-nothere");
    expect(raw.body).toMatchObject({ error: { type: "not_found_error", code: "not_found" } });
    const list = await f.json("GET", "/v1/files");
    expect(list.body).toEqual({ object: "list", data: [], first_id: null, last_id: null, has_more: false });
  });

  it("checks what an upload says: purpose, expires_after (and batch's 30 days), one file in 'file'", async () => {
    const file = async () => toFile(Buffer.from("x"), "x.txt");
    const bad = expectApiError(
      await rejection(client.files.create({ file: await file(), purpose: "fine-tune-results" as never })),
      BadRequestError,
      400,
    );
    expect(bad.param).toBe("purpose");
    expect(bad.message).toMatch(/user_data/);
    const expiring = await client.files.create({
      file: await file(),
      purpose: "user_data",
      expires_after: { anchor: "created_at", seconds: 3600 },
    });
    expect(expiring.expires_at).toBeGreaterThanOrEqual(expiring.created_at + 3599);
    expect(expiring.expires_at).toBeLessThanOrEqual(expiring.created_at + 3601);
    const batch = await client.files.create({ file: await file(), purpose: "batch" });
    expect(batch.expires_at! - batch.created_at).toBeGreaterThanOrEqual(30 * 86400 - 1);
    for (const seconds of [60, 2592001, 1.5]) {
      const e = expectApiError(
        await rejection(
          client.files.create({
            file: await file(),
            purpose: "user_data",
            expires_after: { anchor: "created_at", seconds },
          }),
        ),
        BadRequestError,
        400,
      );
      expect(e.param).toBe("expires_after.seconds");
    }
    // By hand: no file, two files, an unknown field, a field name that is not a file field.
    const boundary = "b0undary";
    const post = (body: string) =>
      fetch(`${f.url}/v1/files`, {
        method: "POST",
        headers: {
          authorization: "Bearer test",
          "content-type": `multipart/form-data; boundary=${boundary}`,
        },
        body,
      });
    const part = (name: string, value: string, filename?: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n\r\n${value}\r\n`;
    const cases: Array<[string, string]> = [
      [`${part("purpose", "user_data")}--${boundary}--\r\n`, "'file'"],
      [
        `${part("file", "a", "a.txt")}${part("file", "b", "b.txt")}${part("purpose", "user_data")}--${boundary}--\r\n`,
        "one file",
      ],
      [
        `${part("file", "a", "a.txt")}${part("purpose", "user_data")}${part("color", "blue")}--${boundary}--\r\n`,
        "color",
      ],
      [`${part("upload", "a", "a.txt")}${part("purpose", "user_data")}--${boundary}--\r\n`, "'file'"],
      [`${part("file", "a", "a.txt")}--${boundary}--\r\n`, "purpose"],
      [`${part("file", "no file name")}${part("purpose", "user_data")}--${boundary}--\r\n`, "a file part"],
      ["this is not multipart at all", "multipart"],
    ];
    for (const [body, says] of cases) {
      const res = await post(body);
      const json = (await res.json()) as { error: { message: string; type: string } };
      expect(res.status, body).toBe(400);
      expect(json.error.type, body).toBe("invalid_request_error");
      expect(json.error.message, body).toContain(says);
    }
    expect(incoming(f)).toEqual([]);
    await client.files.delete(expiring.id);
    await client.files.delete(batch.id);
  });

  it("multipart is taken by the upload route only, and only from a client sending a credential header", async () => {
    const body = new FormData();
    body.append("file", new Blob(["hi"]), "hi.txt");
    body.append("purpose", "user_data");
    // Another route: still JSON only.
    const elsewhere = await fetch(`${f.url}/v1/agents`, {
      method: "POST",
      headers: { authorization: "Bearer test", "openai-beta": "agents=v1" },
      body,
    });
    expect(elsewhere.status).toBe(415);
    // The upload route: multipart only.
    const json = await f.request("POST", "/v1/files", { file: "x", purpose: "user_data" });
    expect(json.status).toBe(415);
    expect(await json.json()).toMatchObject({
      error: { type: "invalid_request_error", code: "unsupported_media_type" },
    });
    // What a cross-site form could send: no credential header.
    const form = await fetch(`${f.url}/v1/files`, { method: "POST", body });
    expect(form.status).toBe(403);
    expect(await form.json()).toMatchObject({ error: { type: "permission_error" } });
    const foreign = await fetch(`${f.url}/v1/files`, {
      method: "POST",
      headers: { authorization: "Bearer test", origin: "https://evil.example" },
      body,
    });
    expect(foreign.status).toBe(403);
    expect(await all(client.files.list())).toEqual([]);
  });

  it("beyond --file-size-limit: 413 in the official shape, and nothing kept", async () => {
    const err = await rejection(
      client.files.create({
        file: await toFile(randomBytes(64 * 1024 + 1), "big.bin"),
        purpose: "user_data",
      }),
    );
    const e = expectApiError(err, OpenAI.APIError, 413);
    expect(e.message).toMatch(/65536 bytes/);
    // Exactly the limit is fine.
    const fits = await client.files.create({
      file: await toFile(randomBytes(64 * 1024), "fits.bin"),
      purpose: "user_data",
    });
    expect(fits.bytes).toBe(64 * 1024);
    await client.files.delete(fits.id);
    expect(incoming(f)).toEqual([]);
    expect(stored(f)).toEqual([]);
    expect(await all(client.files.list())).toEqual([]);
  });

  it("streams an upload to disk as it arrives; an interrupted one leaves nothing behind", async () => {
    const boundary = "streamboundary";
    const file = randomBytes(48 * 1024);
    const { head, tail } = form(boundary, file, { purpose: "user_data" });
    // The first half of the file, then a pause: it is on disk already (not held in memory until the end).
    const up = rawUpload(f, head.length + tail.length, boundary);
    const half = head.length - file.length / 2;
    up.socket.write(head.subarray(0, half));
    const tmp = await waitFor(
      () => {
        const [name] = incoming(f);
        if (!name) return null;
        const path = join(f.config.files.dir, ".incoming", name);
        return statSync(path).size >= file.length / 2 - 8192 ? path : null;
      },
      10_000,
      "the first half of the upload on disk",
    );
    expect(statSync(tmp!).size).toBeLessThan(file.length);
    up.socket.write(head.subarray(half));
    up.socket.write(tail);
    const answer = (await waitFor(
      () => (/\r\n\r\n\{.*\}$/s.test(up.response()) ? up.response() : null),
      10_000,
      "the upload's answer",
    ))!;
    up.socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const created = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { id: string; bytes: number };
    expect(created.bytes).toBe(file.length);
    const content = await client.files.content(created.id);
    expect(sha(Buffer.from(await content.arrayBuffer()))).toBe(sha(file));
    expect(incoming(f)).toEqual([]);
    await client.files.delete(created.id);

    // Cut off in the middle of the file: the temporary file goes, no file is made.
    const cut = rawUpload(f, head.length + tail.length, "cutboundary");
    const cutForm = form("cutboundary", file, { purpose: "user_data" });
    cut.socket.write(cutForm.head.subarray(0, half));
    await waitFor(() => incoming(f).length === 1, 10_000, "the cut upload's temporary file");
    cut.socket.destroy();
    await waitFor(() => incoming(f).length === 0, 10_000, "the temporary file to be removed");
    expect(stored(f)).toEqual([]);
    expect(await all(client.files.list())).toEqual([]);
  });

  it("an Idempotency-Key repeat with the same upload gets the same file (its contents are not kept twice)", async () => {
    const upload = async () =>
      client.files
        .create(
          { file: await toFile(Buffer.from("same"), "same.txt"), purpose: "user_data" },
          { headers: { "Idempotency-Key": "upload-1" } },
        )
        .withResponse();
    const first = await upload();
    const again = await upload();
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    const other = await rejection(
      client.files.create(
        { file: await toFile(Buffer.from("different"), "same.txt"), purpose: "user_data" },
        { headers: { "Idempotency-Key": "upload-1" } },
      ),
    );
    expect((other as APIError).status).toBe(409);
    expect((await all(client.files.list())).map((x) => x.id)).toEqual([first.data.id]);
    expect(incoming(f)).toEqual([]);
    await client.files.delete(first.data.id);
  });
});

describe("file_id references (environments, templates)", () => {
  let f: ServerFixture;
  let client: OpenAI;
  beforeAll(async () => {
    f = await startServer();
    client = sdk(f);
  });
  afterAll(async () => {
    await f.close();
  });

  const ready = (id: string) =>
    waitFor(
      async () => {
        const e = await client.beta.agents.environments.retrieve(id);
        if (e.status === "failed") throw new Error(`environment ${id} failed`);
        return e.status === "ready" ? e : null;
      },
      30_000,
      `environment ${id} to be ready`,
    );

  it("environments.files.upload() and prepare(): uploaded with the Files API, copied into the environment", async () => {
    const prepared = await client.beta.agents.environments.files.prepare({
      "/workspace/data/input.csv": await toFile(Buffer.from("a,b\n1,2\n"), "input.csv"),
      "/workspace/README.md": await toFile(Buffer.from("# hello\n"), "README.md"),
    });
    expect(prepared.uploadedFiles.map((x) => x.purpose)).toEqual(["user_data", "user_data"]);
    expect(prepared.files).toEqual([
      { type: "file_id", file_id: prepared.uploadedFiles[0]!.id, path: "/workspace/data/input.csv" },
      { type: "file_id", file_id: prepared.uploadedFiles[1]!.id, path: "/workspace/README.md" },
    ]);
    const env = await client.beta.agents.environments.create({
      environment: { type: "openai_hosted", files: prepared.files },
    });
    const info = (await ready(env.id))!;
    expect(info.files).toEqual([
      {
        id: expect.any(String),
        type: "file_id",
        file_id: prepared.uploadedFiles[0]!.id,
        path: "/workspace/data/input.csv",
        size_bytes: 8,
      },
      {
        id: expect.any(String),
        type: "file_id",
        file_id: prepared.uploadedFiles[1]!.id,
        path: "/workspace/README.md",
        size_bytes: 8,
      },
    ]);
    const dir = join(f.workspace, env.id);
    expect(readFileSync(join(dir, "data/input.csv"), "utf8")).toBe("a,b\n1,2\n");

    // upload(): one more file into the live environment.
    const { uploadedFile, environmentFile } = await client.beta.agents.environments.files.upload(env.id, {
      file: await toFile(Buffer.from("late\n"), "late.txt"),
      path: "/workspace/late/late.txt",
    });
    expect(uploadedFile).toMatchObject({
      object: "file",
      purpose: "user_data",
      bytes: 5,
      filename: "late.txt",
    });
    expect(environmentFile).toEqual({
      object: "agent.environment.file",
      environment_id: env.id,
      path: "/workspace/late/late.txt",
      size_bytes: 5,
    });
    expect(readFileSync(join(dir, "late/late.txt"), "utf8")).toBe("late\n");

    // The copies are the environment's: deleting the uploads changes nothing there.
    for (const u of [...prepared.uploadedFiles, uploadedFile]) await client.files.delete(u.id);
    expect(readFileSync(join(dir, "data/input.csv"), "utf8")).toBe("a,b\n1,2\n");
    expect(readFileSync(join(dir, "late/late.txt"), "utf8")).toBe("late\n");
    // A deleted (or unknown) file is 404, named by its parameter.
    const gone = expectApiError(
      await rejection(
        client.beta.agents.environments.files.create(env.id, {
          type: "file_id",
          file_id: uploadedFile.id,
          path: "/workspace/again.txt",
        }),
      ),
      NotFoundError,
      404,
    );
    expect(gone.param).toBe("file_id");
    const unknown = expectApiError(
      await rejection(
        client.beta.agents.environments.create({
          environment: {
            type: "openai_hosted",
            files: [
              { type: "inline", path: "/workspace/a.txt", data: b64("a") },
              { type: "file_id", file_id: "file-nope", path: "/workspace/b.txt" },
            ],
          },
        }),
      ),
      NotFoundError,
      404,
    );
    expect(unknown.param).toBe("environment.files[1].file_id");
  });

  it("a session's inline environment and a template take file_id; a template resolves it for each session", async () => {
    const up = await client.files.create({
      file: await toFile(Buffer.from("from a template\n"), "t.txt"),
      purpose: "user_data",
    });
    const t = await client.beta.agents.environments.templates.create({
      name: "with an upload",
      files: [{ type: "file_id", file_id: up.id, path: "/workspace/t.txt" }],
    });
    expect(t.files).toEqual([{ type: "file_id", file_id: up.id, path: "/workspace/t.txt" }]);
    expect((await client.beta.agents.environments.templates.retrieve(t.id)).files).toEqual(t.files);
    const s = await client.beta.agents.sessions.create({
      agent: { model: "mock-model" },
      environment: { type: "openai_hosted", environment_template_id: t.id } as never,
    });
    const envId = (s.environment as { id: string }).id;
    await ready(envId);
    expect(readFileSync(join(f.workspace, envId, "t.txt"), "utf8")).toBe("from a template\n");

    // Once the upload is gone, a new session from the template is refused (404 naming the template), the old
    // environment keeps its copy.
    await client.files.delete(up.id);
    const refused = expectApiError(
      await rejection(
        client.beta.agents.sessions.create({
          agent: { model: "mock-model" },
          environment: { type: "openai_hosted", environment_template_id: t.id } as never,
        }),
      ),
      NotFoundError,
      404,
    );
    expect(refused.param).toBe("environment.environment_template_id");
    expect(refused.message).toContain(t.id);
    expect(readFileSync(join(f.workspace, envId, "t.txt"), "utf8")).toBe("from a template\n");
    // A template cannot be saved with a file that is not there.
    expectApiError(
      await rejection(
        client.beta.agents.environments.templates.create({
          files: [{ type: "file_id", file_id: up.id, path: "/workspace/t.txt" }],
        }),
      ),
      NotFoundError,
      404,
    );
    await client.beta.agents.sessions.delete(s.id);
  });

  it("a file_id with a path outside /workspace is refused like an inline one", async () => {
    const up = await client.files.create({ file: await toFile(Buffer.from("x"), "x"), purpose: "user_data" });
    expectApiError(
      await rejection(
        client.beta.agents.environments.create({
          environment: {
            type: "openai_hosted",
            files: [{ type: "file_id", file_id: up.id, path: "/etc/x" }],
          },
        }),
      ),
      BadRequestError,
      400,
    );
    // Skills and the like are still refused, never ignored.
    expectApiError(
      await rejection(
        client.beta.agents.environments.create({
          environment: {
            type: "openai_hosted",
            skills: [{ type: "skill_reference", skill_id: "s" }],
          } as never,
        }),
      ),
      UnprocessableEntityError,
      422,
    );
    await client.files.delete(up.id);
  });
});

describe("projects and expiry", () => {
  it("another project's file is 404 and never listed; expired files are gone, then purged from disk", async () => {
    const clock = new TestClock();
    const f = await startServer({ clock });
    try {
      const alpha = await f.service.core.keys.create("alpha");
      const beta = await f.service.core.keys.create("beta");
      const a = sdk(f, { apiKey: alpha.key });
      const b = sdk(f, { apiKey: beta.key });
      const mine = await a.files.create({
        file: await toFile(Buffer.from("alpha's"), "a.txt"),
        purpose: "user_data",
      });
      expectApiError(await rejection(b.files.retrieve(mine.id)), NotFoundError, 404);
      expectApiError(await rejection(b.files.content(mine.id)), NotFoundError, 404);
      expectApiError(await rejection(b.files.delete(mine.id)), NotFoundError, 404);
      expect(await all(b.files.list())).toEqual([]);
      // Nor can another project's environment use it.
      expectApiError(
        await rejection(
          b.beta.agents.environments.create({
            environment: {
              type: "openai_hosted",
              files: [{ type: "file_id", file_id: mine.id, path: "/workspace/a" }],
            },
          }),
        ),
        NotFoundError,
        404,
      );
      expect((await a.files.retrieve(mine.id)).id).toBe(mine.id);
      // Without a key: 401.
      expect((await rejection(sdk(f, { apiKey: "wrong" }).files.list())) as APIError).toMatchObject({
        status: 401,
      });

      const brief = await a.files.create({
        file: await toFile(Buffer.from("brief"), "brief.txt"),
        purpose: "user_data",
        expires_after: { anchor: "created_at", seconds: 3600 },
      });
      expect(stored(f)).toContain(brief.id);
      // Expired (1 s before): not found and not listed at once, whether it was purged yet or not.
      clock.advance(3599);
      expect((await a.files.retrieve(brief.id)).id).toBe(brief.id);
      clock.advance(2);
      expectApiError(await rejection(a.files.retrieve(brief.id)), NotFoundError, 404);
      expect((await all(a.files.list())).map((x) => x.id)).toEqual([mine.id]);
      // The hourly housekeeping (its timer due by now) purges it: the record and the contents go.
      await f.service.core.files.purgeExpired();
      await waitFor(() => !stored(f).includes(brief.id), 10_000, "the expired file's contents to go");
      expect(await f.service.core.store.getFile(brief.id)).toBeUndefined();
      expect(stored(f)).toContain(mine.id);
    } finally {
      await f.close();
    }
  });
});

describe("storage and configuration", () => {
  it("temporary files a crash left are swept once no upload has written to them for an hour", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cas-files-"));
    try {
      const storage = new FileStorage(dir);
      const stale = await storage.receive(Readable.from([Buffer.from("left by a crash")]));
      const fresh = await storage.receive(Readable.from([Buffer.from("being written")]));
      expect(stale.sha256).toBe(sha("left by a crash"));
      const old = (Date.now() - 2 * 3600_000) / 1000;
      utimesSync(stale.tmp, old, old);
      expect(await storage.sweepIncoming(Date.now())).toBe(1);
      expect(existsSync(stale.tmp)).toBe(false);
      expect(existsSync(fresh.tmp)).toBe(true);
    } finally {
      cleanup(dir);
    }
  });

  it("an environment whose upload was deleted before it was copied fails with file_not_found", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cas-files-"));
    try {
      const config = loadConfig(["--data-dir", dir], {}, dir);
      const provisioner = new Provisioner({
        engines: stubEngines(),
        settings: config.environments,
        logger: pino({ level: "silent" }),
        searchPath: process.env.PATH ?? "/usr/bin:/bin",
      });
      writeFileSync(join(dir, "present"), "here");
      const job = (content: string) => ({
        id: "env_1",
        directory: join(dir, "env"),
        spec: {
          env: {},
          files: [
            {
              path: "/workspace/a.txt",
              rel: "a.txt",
              source: {
                type: "file_id" as const,
                file_id: "file-1",
                param: null,
                resolved: { bytes: 4, content },
              },
            },
          ],
          network: NO_NETWORK,
          packages: { npm: [], python: [], system: [] },
          repositories: [],
          setup_commands: [],
          environment_template_id: null,
        },
        extraEnv: {},
        redact: (t: string) => t,
        logFile: join(dir, "setup.log"),
      });
      expect(await provisioner.run(job(join(dir, "present")))).toEqual({ ok: true });
      expect(readFileSync(join(dir, "env", "a.txt"), "utf8")).toBe("here");
      const failed = await provisioner.run(job(join(dir, "gone")));
      expect(failed).toMatchObject({ ok: false, error: { code: "file_not_found" } });
      expect(JSON.stringify(failed)).toContain("file-1");
    } finally {
      cleanup(dir);
    }
  });

  it("--file-dir and the workspace root may not hold one another; --file-size-limit is a positive integer", () => {
    const base = ["--data-dir", "/srv/data"];
    expect(loadConfig(base, {}, "/").files).toEqual({ dir: "/srv/data/files", maxBytes: 512 * 1024 * 1024 });
    expect(
      loadConfig([...base, "--file-dir", "/shared/files", "--file-size-limit", "1024"], {}, "/").files,
    ).toEqual({ dir: "/shared/files", maxBytes: 1024 });
    expect(loadConfig(base, { AGENT_FILE_DIR: "/x/f", AGENT_FILE_SIZE_LIMIT: "10" }, "/").files).toEqual({
      dir: "/x/f",
      maxBytes: 10,
    });
    expect(() => loadConfig([...base, "--file-dir", "/srv/data/workspace/files"], {}, "/")).toThrow(
      ConfigError,
    );
    expect(() => loadConfig([...base, "--workspace", "/srv/data/files/ws"], {}, "/")).toThrow(ConfigError);
    expect(() => loadConfig([...base, "--file-size-limit", "0"], {}, "/")).toThrow(ConfigError);
    expect(() => loadConfig([...base, "--file-size-limit", "1e3x"], {}, "/")).toThrow(ConfigError);
  });
});
