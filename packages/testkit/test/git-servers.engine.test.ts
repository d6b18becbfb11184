import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  commitFiles,
  type GitDaemon,
  type GitHttpServer,
  gitOut,
  makeBareFrom,
  makeRepo,
  startGitDaemon,
  startGitHttpServer,
} from "../src/index.js";

const PASSWORD = "s3cret";
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
const withAuth = (header: string) => ["-c", `http.extraHeader=Authorization: ${header}`];
const FILES = { "README.md": "# hello\n", "src/main.txt": "main file\n" };

let tmp: string;
let root: string;
let src: string;
let first: string;
let daemon: GitDaemon | undefined;
let http: GitHttpServer | undefined;
let n = 0;
/** A fresh directory name under the temp dir (git clone creates it). */
const fresh = (name: string) => join(tmp, `${name}-${++n}`);

/** The commit id `ref` has on the remote `url`, or undefined. */
async function remoteRef(url: string, ref: string, args: string[] = []): Promise<string | undefined> {
  const out = await gitOut(tmp, [...args, "ls-remote", url, ref]);
  return out ? out.split("\t")[0] : undefined;
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "git-servers-"));
  root = join(tmp, "served");
  src = join(tmp, "src");
  first = await makeRepo(src, FILES);
  await makeBareFrom(src, join(root, "public.git"));
  await makeBareFrom(src, join(root, "private.git"));
  [daemon, http] = await Promise.all([
    startGitDaemon({ root }),
    startGitHttpServer({ root, users: { alice: PASSWORD }, private: ["private.git"] }),
  ]);
});

afterAll(async () => {
  await Promise.all([daemon?.close(), http?.close()]);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("repository helpers", () => {
  it("makeRepo: one commit of the files on main; commitFiles adds one on top; makeBareFrom copies them", async () => {
    expect(first).toMatch(/^[0-9a-f]{40}$/);
    expect(await gitOut(src, ["rev-parse", "HEAD"])).toBe(first);
    expect(await gitOut(src, ["symbolic-ref", "--short", "HEAD"])).toBe("main");
    expect((await gitOut(src, ["ls-files"])).split("\n")).toEqual(["README.md", "src/main.txt"]);
    expect(await gitOut(src, ["log", "-1", "--format=%an <%ae>"])).toBe("test <test@localhost>");

    const dir = fresh("helpers");
    const one = await makeRepo(dir, { "a.txt": "a\n" }, { branch: "trunk", message: "first one" });
    const two = await commitFiles(dir, { "b/c.txt": "c\n" }, "second one");
    expect(await gitOut(dir, ["symbolic-ref", "--short", "HEAD"])).toBe("trunk");
    expect(await gitOut(dir, ["rev-parse", `${two}^`])).toBe(one);
    expect(await gitOut(dir, ["log", "--format=%s"])).toBe("second one\nfirst one");

    const bare = fresh("bare.git");
    await makeBareFrom(dir, bare);
    expect(await gitOut(bare, ["rev-parse", "--is-bare-repository"])).toBe("true");
    expect(await gitOut(bare, ["rev-parse", "trunk"])).toBe(two);
  });

  it("gitOut rejects with git's stderr; files outside the repository are refused", async () => {
    await expect(gitOut(src, ["rev-parse", "--verify", "no-such-ref"])).rejects.toThrow(
      /git rev-parse --verify no-such-ref \(in .*\) exited with 128: fatal: Needed a single revision/,
    );
    await expect(commitFiles(src, { "../escape.txt": "x" }, "nope")).rejects.toThrow(/is not inside/);
    expect(existsSync(join(tmp, "escape.txt"))).toBe(false);
  });
});

describe("git daemon (git://)", () => {
  it("serves clones: url() and the files of the repository", async () => {
    expect(daemon!.url("public.git")).toBe(`git://127.0.0.1:${daemon!.port}/public.git`);
    const dest = fresh("daemon-clone");
    await gitOut(tmp, ["clone", "-q", daemon!.url("public.git"), dest]);
    expect(await readFile(join(dest, "README.md"), "utf8")).toBe(FILES["README.md"]);
    expect(await readFile(join(dest, "src/main.txt"), "utf8")).toBe(FILES["src/main.txt"]);
    expect(await gitOut(dest, ["rev-parse", "HEAD"])).toBe(first);
  });

  it("accepts pushes (a new branch lands)", async () => {
    const dest = fresh("daemon-push");
    await gitOut(tmp, ["clone", "-q", daemon!.url("public.git"), dest]);
    const id = await commitFiles(dest, { "pushed.txt": "over git://\n" }, "pushed over git://");
    await gitOut(dest, ["push", "-q", "origin", "HEAD:refs/heads/daemon-branch"]);
    expect(await remoteRef(daemon!.url("public.git"), "refs/heads/daemon-branch")).toBe(id);
    expect(await gitOut(join(root, "public.git"), ["rev-parse", "daemon-branch"])).toBe(id);
  });

  it("a missing repository is a clear error", async () => {
    await expect(gitOut(tmp, ["ls-remote", daemon!.url("missing.git")])).rejects.toThrow(/missing\.git/);
  });

  it("a second daemon on the same root gets its own port; close() ends it", async () => {
    const other = await startGitDaemon({ root });
    expect(other.port).not.toBe(daemon!.port);
    expect(await remoteRef(other.url("public.git"), "refs/heads/main")).toBe(first);
    await other.close();
    await other.close(); // idempotent
    await expect(gitOut(tmp, ["ls-remote", other.url("public.git")])).rejects.toThrow(/unable to connect/i);
  });

  it("refuses a root that is not a directory", async () => {
    await expect(startGitDaemon({ root: join(tmp, "nope") })).rejects.toThrow(/is not a directory/);
  });
});

describe("smart HTTP (git http-backend)", () => {
  it("serves a public repository without credentials", async () => {
    expect(http!.url("public.git")).toBe(`http://127.0.0.1:${http!.port}/public.git`);
    const before = http!.requests.length;
    const dest = fresh("http-clone");
    await gitOut(tmp, ["clone", "-q", http!.url("public.git"), dest]);
    expect(await readFile(join(dest, "README.md"), "utf8")).toBe(FILES["README.md"]);
    expect(await gitOut(dest, ["rev-parse", "HEAD"])).toBe(first);
    const seen = http!.requests.slice(before);
    expect(seen[0]).toEqual({
      method: "GET",
      path: "/public.git/info/refs?service=git-upload-pack",
      authorization: null,
    });
    expect(seen.some((r) => r.method === "POST" && r.path === "/public.git/git-upload-pack")).toBe(true);
  });

  it("a private repository needs credentials", async () => {
    const before = http!.requests.length;
    await expect(gitOut(tmp, ["clone", "-q", http!.url("private.git"), fresh("anon")])).rejects.toThrow(
      /could not read Username/,
    );
    // http-backend also finds private.git at /private: that alias is guarded too.
    await expect(gitOut(tmp, ["ls-remote", http!.url("private")])).rejects.toThrow(/could not read Username/);
    await expect(
      gitOut(tmp, [...withAuth(basic("alice", "wrong")), "ls-remote", http!.url("private.git")]),
    ).rejects.toThrow(/could not read Username/); // a refused header: git asks for a password
    expect(http!.requests.slice(before).every((r) => r.path.includes("/info/refs"))).toBe(true);

    const dest = fresh("private-clone");
    const header = basic("alice", PASSWORD);
    await gitOut(tmp, [...withAuth(header), "clone", "-q", http!.url("private.git"), dest]);
    expect(await readFile(join(dest, "src/main.txt"), "utf8")).toBe(FILES["src/main.txt"]);
    expect(http!.requests.filter((r) => r.path.startsWith("/private.git/")).at(-1)?.authorization).toBe(
      header,
    );
  });

  it("a push needs credentials, then lands", async () => {
    const dest = fresh("http-push");
    await gitOut(tmp, ["clone", "-q", http!.url("public.git"), dest]);
    const id = await commitFiles(dest, { "pushed.txt": "over http\n" }, "pushed over http");

    const before = http!.requests.length;
    await expect(gitOut(dest, ["push", "-q", "origin", "HEAD:refs/heads/http-branch"])).rejects.toThrow(
      /could not read Username/,
    );
    expect(await remoteRef(http!.url("public.git"), "refs/heads/http-branch")).toBeUndefined();
    expect(http!.requests[before]).toEqual({
      method: "GET",
      path: "/public.git/info/refs?service=git-receive-pack",
      authorization: null,
    });

    const header = basic("alice", PASSWORD);
    const mark = http!.requests.length;
    await gitOut(dest, [...withAuth(header), "push", "-q", "origin", "HEAD:refs/heads/http-branch"]);
    expect(await remoteRef(http!.url("public.git"), "refs/heads/http-branch")).toBe(id);
    const pushes = http!.requests.slice(mark).filter((r) => r.path.includes("receive-pack"));
    expect(pushes.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /public.git/info/refs?service=git-receive-pack",
      "POST /public.git/git-receive-pack",
    ]);
    expect(pushes.every((r) => r.authorization === header)).toBe(true);

    // Credentials in the URL work too (git retries after the 401 challenge).
    const url = http!.url("public.git").replace("http://", `http://alice:${PASSWORD}@`);
    await gitOut(dest, ["push", "-q", url, "HEAD:refs/heads/url-branch"]);
    expect(await gitOut(join(root, "public.git"), ["rev-parse", "url-branch"])).toBe(id);
  });

  it("gzip'd request bodies (a fetch of many refs) reach http-backend intact", async () => {
    // Forty branches on distinct commits: forty `want` lines, over the 1 KiB above which git gzips its request.
    const many = fresh("many");
    await makeRepo(many, { "0.txt": "0\n" });
    for (let i = 1; i <= 40; i++) {
      await commitFiles(many, { [`${i}.txt`]: `${i}\n` }, `commit ${i}`);
      await gitOut(many, ["branch", `b${i}`]);
    }
    await makeBareFrom(many, join(root, "many.git"));
    const trace = join(tmp, "curl-trace.txt");
    const dest = fresh("many-clone");
    await gitOut(tmp, ["clone", "-q", "--no-single-branch", http!.url("many.git"), dest], {
      env: { GIT_TRACE_CURL: trace, GIT_TRACE_CURL_NO_DATA: "1" },
    });
    expect(await readFile(trace, "utf8")).toMatch(/Send header: Content-Encoding: gzip/i);
    expect((await gitOut(dest, ["branch", "-r"])).split("\n")).toHaveLength(42); // b1…b40, main, HEAD
    expect(await gitOut(dest, ["rev-parse", "origin/b40"])).toBe(await gitOut(many, ["rev-parse", "b40"]));
  });

  it("an unknown repository is a 404", async () => {
    const res = await fetch(`${http!.url("missing.git")}/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(404);
    await res.arrayBuffer();
  });

  it("close() drops the server", async () => {
    const other = await startGitHttpServer({ root });
    expect(await remoteRef(other.url("public.git"), "refs/heads/main")).toBe(first);
    await other.close();
    await expect(gitOut(tmp, ["ls-remote", other.url("public.git")])).rejects.toThrow(/Failed to connect/i);
  });
});
