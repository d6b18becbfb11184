// The Files API with two instances on one PostgreSQL database (made for this run), sharing the workspace root and
// the files directory (each with its own data directory): a file uploaded through one instance is listed, read,
// copied into an environment and deleted through the other.
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NotFoundError, toFile } from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  cleanup,
  expectNothingLeft,
  type ServerFixture,
  startServer,
  waitFor,
} from "../../support/fixture.js";
import { expectApiError, rejection, sdk } from "../../support/openai-helpers.js";
import { dropTestDatabase, pgTestUrl } from "../../support/postgres.js";

let dir: string;
let dbUrl: string;
const instances: ServerFixture[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cas-files-cluster-"));
  mkdirSync(join(dir, "workspace"));
  mkdirSync(join(dir, "files"));
  dbUrl = await pgTestUrl();
  for (let i = 0; i < 2; i++) {
    instances.push(
      await startServer({
        args: [
          "--database-url",
          dbUrl,
          "--workspace",
          join(dir, "workspace"),
          "--file-dir",
          join(dir, "files"),
        ],
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  // The instances share the workspace root: each one's engine runs there until it stops, so nothing may be left
  // once both have stopped (checked then, not after the first).
  await Promise.all(instances.map((f) => f.service.stop()));
  expectNothingLeft(...instances.flatMap((f) => [f.dataDir, f.workspace]));
  if (dbUrl) await dropTestDatabase(dbUrl);
  if (dir) cleanup(dir);
});

it("uploaded on A: listed, read, copied into an environment and deleted on B", async () => {
  const [a, b] = instances.map((f) => sdk(f));
  const up = await a!.files.create({
    file: await toFile(Buffer.from("shared contents\n"), "shared.txt"),
    purpose: "user_data",
  });
  expect(await b!.files.retrieve(up.id)).toEqual(up);
  const listed = [];
  for await (const x of b!.files.list()) listed.push(x.id);
  expect(listed).toEqual([up.id]);
  expect(await (await b!.files.content(up.id)).text()).toBe("shared contents\n");

  const env = await b!.beta.agents.environments.create({
    environment: {
      type: "openai_hosted",
      files: [{ type: "file_id", file_id: up.id, path: "/workspace/s.txt" }],
    },
  });
  await waitFor(
    async () => (await a!.beta.agents.environments.retrieve(env.id)).status === "ready",
    30_000,
    "the environment to be ready",
  );
  expect(readFileSync(join(dir, "workspace", env.id, "s.txt"), "utf8")).toBe("shared contents\n");

  await b!.files.delete(up.id);
  expectApiError(await rejection(a!.files.retrieve(up.id)), NotFoundError, 404);
  expectApiError(await rejection(a!.files.content(up.id)), NotFoundError, 404);
});
