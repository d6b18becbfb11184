import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError, type ErrorKind } from "../../../src/kernel/errors.js";
import { environmentPath, environmentRoot } from "../../../src/model/environment-paths.js";
import { hostPathsOf } from "../../../src/platform/workspace/environment-paths.js";
import {
  contentTypeFor,
  decodeArtifactId,
  deleteArtifact,
  encodeArtifactId,
  listArtifacts,
  readArtifact,
  resolveInWorkspace,
  statArtifact,
  writeUpload,
} from "../../../src/platform/workspace/index.js";

const DENIED = "Access denied: path outside workspace";
const ESCAPES = "Path escapes base directory";

function expectApiError(fn: () => unknown, kind: ErrorKind, message?: string | RegExp): ApiError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ApiError);
  const err = caught as ApiError;
  expect(err.kind).toBe(kind);
  if (typeof message === "string") expect(err.message).toBe(message);
  else if (message) expect(err.message).toMatch(message);
  return err;
}

const id = encodeArtifactId;
const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

let base: string; // temp dir holding the workspace and an "outside" dir
let root: string;
let realRoot: string;
let outside: string;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "ws-test-"));
  root = join(base, "ws");
  outside = join(base, "outside");
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "top secret");
  realRoot = realpathSync(root);
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

describe("artifact ids", () => {
  it("encodes as unpadded base64url and round-trips", () => {
    expect(id("e2e_artifact.txt")).toBe("ZTJlX2FydGlmYWN0LnR4dA");
    expect(id("report.md")).toBe("cmVwb3J0Lm1k");
    for (const p of ["a", "ab", "abc", "dir/sub/file.bin", "ünïcødé/文件.txt", "emoji 🎉.md", "x?y>z~"]) {
      const encoded = id(p);
      expect(encoded).toMatch(/^[A-Za-z0-9_-]*$/);
      expect(decodeArtifactId(encoded)).toBe(p);
    }
  });

  it("accepts padded ids and unpadded ids of every length", () => {
    expect(decodeArtifactId("YQ==")).toBe("a");
    expect(decodeArtifactId("YQ")).toBe("a");
    expect(decodeArtifactId("YWI")).toBe("ab");
    expect(decodeArtifactId("YWJj")).toBe("abc");
    // base64url alphabet ("-" and "_") — "?>" encodes to "Pz4", "~~~" to "fn5-"
    expect(decodeArtifactId("fn5-")).toBe("~~~");
    expect(decodeArtifactId(id("a>?b"))).toBe("a>?b");
  });

  it("falls back to the raw id when it is not decodable", () => {
    expect(decodeArtifactId("report.md")).toBe("report.md"); // "." is not base64url
    expect(decodeArtifactId("a/b")).toBe("a/b"); // "/" is not base64url
    expect(decodeArtifactId("abcde")).toBe("abcde"); // impossible length (4n+1)
    expect(decodeArtifactId("__8")).toBe("__8"); // decodes to 0xff 0xff: not UTF-8
    expect(decodeArtifactId("YQ=")).toBe("YQ="); // bad padding
    expect(decodeArtifactId("")).toBe("");
  });
});

describe("resolveInWorkspace", () => {
  it("normalises relative paths", () => {
    expect(resolveInWorkspace(root, "./a//b/../c.txt")).toEqual({
      abs: join(realRoot, "a/c.txt"),
      rel: "a/c.txt",
    });
    expect(resolveInWorkspace(root, "")).toEqual({ abs: realRoot, rel: "" });
    expect(resolveInWorkspace(root, "missing/dir/file").rel).toBe("missing/dir/file");
  });

  it("rejects traversal, absolute paths and NUL bytes with 403", () => {
    for (const p of ["../../etc/passwd", "..", "a/../../ws2/x", "/etc/passwd", join(root, "x"), "a\0b"]) {
      expectApiError(() => resolveInWorkspace(root, p), "forbidden", DENIED);
    }
  });

  it("rejects symlinks pointing out, at any level, existing or dangling", () => {
    symlinkSync(outside, join(root, "linkdir"));
    symlinkSync(join(outside, "nope", "new.txt"), join(root, "dangling"));
    mkdirSync(join(root, "deep"));
    symlinkSync("../../outside", join(root, "deep", "rel-out"));
    for (const p of [
      "linkdir",
      "linkdir/secret.txt",
      "linkdir/missing/x",
      "dangling",
      "deep/rel-out/secret.txt",
    ]) {
      expectApiError(() => resolveInWorkspace(root, p), "forbidden", DENIED);
    }
  });

  it("rejects symlink loops", () => {
    symlinkSync("loop-b", join(root, "loop-a"));
    symlinkSync("loop-a", join(root, "loop-b"));
    expectApiError(() => resolveInWorkspace(root, "loop-a/x"), "forbidden", DENIED);
  });

  it("accepts a root that is itself a symlink", () => {
    const linkRoot = join(base, "root-link");
    symlinkSync(root, linkRoot);
    writeFileSync(join(root, "f.txt"), "x");
    expect(resolveInWorkspace(linkRoot, "f.txt")).toEqual({ abs: join(realRoot, "f.txt"), rel: "f.txt" });
    expect(statArtifact(linkRoot, id("f.txt")).size).toBe(1);
  });
});

describe("stat / read / delete", () => {
  beforeEach(() => {
    mkdirSync(join(root, "sub"));
    writeFileSync(join(root, "sub", "hello.txt"), "hello world");
  });

  it("stats and reads a regular file", () => {
    const info = statArtifact(root, id("sub/hello.txt"));
    expect(info).toMatchObject({
      id: id("sub/hello.txt"),
      path: "sub/hello.txt",
      absPath: join(realRoot, "sub/hello.txt"),
      size: 11,
    });
    expect(Number.isInteger(info.createdAt)).toBe(true);
    expect(Number.isInteger(info.modifiedAt)).toBe(true);
    expect(info.modifiedAt).toBeGreaterThan(1_600_000_000);
    const { info: readInfo, content } = readArtifact(root, id("sub/hello.txt"));
    expect(content.toString()).toBe("hello world");
    expect(readInfo.size).toBe(11);
  });

  it("accepts a raw relative path as id (template fallback)", () => {
    expect(statArtifact(root, "sub/hello.txt").path).toBe("sub/hello.txt");
  });

  it("403s traversal and absolute ids", () => {
    for (const bad of [
      id("../../etc/passwd"),
      "../../etc/passwd",
      id("/etc/passwd"),
      id(join(outside, "secret.txt")),
    ]) {
      expectApiError(() => statArtifact(root, bad), "forbidden", DENIED);
      expectApiError(() => readArtifact(root, bad), "forbidden", DENIED);
      expectApiError(() => deleteArtifact(root, bad), "forbidden", DENIED);
    }
  });

  it("403s a symlinked file pointing outside, and leaves the target alone", () => {
    symlinkSync(join(outside, "secret.txt"), join(root, "leak.txt"));
    expectApiError(() => statArtifact(root, id("leak.txt")), "forbidden", DENIED);
    expectApiError(() => readArtifact(root, id("leak.txt")), "forbidden", DENIED);
    expectApiError(() => deleteArtifact(root, id("leak.txt")), "forbidden", DENIED);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("top secret");
    expect(lstatSync(join(root, "leak.txt")).isSymbolicLink()).toBe(true);
  });

  it("403s files under a symlinked directory pointing outside", () => {
    symlinkSync(outside, join(root, "sub", "out"));
    for (const p of ["sub/out/secret.txt", "sub/out/missing.txt", "sub/out"]) {
      expectApiError(() => statArtifact(root, id(p)), "forbidden", DENIED);
      expectApiError(() => readArtifact(root, id(p)), "forbidden", DENIED);
      expectApiError(() => deleteArtifact(root, id(p)), "forbidden", DENIED);
    }
    expect(existsSync(join(outside, "secret.txt"))).toBe(true);
  });

  it("allows a symlink to a file inside the workspace; delete removes the link only", () => {
    symlinkSync("sub/hello.txt", join(root, "alias.txt"));
    symlinkSync(join(root, "sub"), join(root, "subalias"));
    expect(statArtifact(root, id("alias.txt"))).toMatchObject({ path: "alias.txt", size: 11 });
    expect(readArtifact(root, id("subalias/hello.txt")).content.toString()).toBe("hello world");
    deleteArtifact(root, id("alias.txt"));
    expect(existsSync(join(root, "alias.txt"))).toBe(false);
    expect(readFileSync(join(root, "sub", "hello.txt"), "utf8")).toBe("hello world");
  });

  it("404s a missing file with the decoded path in the message", () => {
    expectApiError(
      () => statArtifact(root, id("nope/missing.txt")),
      "not_found",
      "Artifact not found: nope/missing.txt",
    );
    expectApiError(
      () => readArtifact(root, id("missing.txt")),
      "not_found",
      "Artifact not found: missing.txt",
    );
    expectApiError(
      () => deleteArtifact(root, id("missing.txt")),
      "not_found",
      "Artifact not found: missing.txt",
    );
    // a path through a regular file
    expectApiError(
      () => statArtifact(root, id("sub/hello.txt/x")),
      "not_found",
      "Artifact not found: sub/hello.txt/x",
    );
  });

  it("404s directories and the root itself", () => {
    expectApiError(() => statArtifact(root, id("sub")), "not_found", "Artifact not found: sub");
    expectApiError(() => readArtifact(root, id("sub")), "not_found", "Artifact not found: sub");
    expectApiError(() => deleteArtifact(root, id("sub")), "not_found", "Artifact not found: sub");
    expectApiError(() => statArtifact(root, ""), "not_found", /^Artifact not found: /);
    expectApiError(() => statArtifact(root, id(".")), "not_found", /^Artifact not found: /);
    expect(existsSync(join(root, "sub"))).toBe(true);
  });

  it("413s a read over maxBytes", () => {
    expectApiError(() => readArtifact(root, id("sub/hello.txt"), 10), "payload_too_large");
    expect(readArtifact(root, id("sub/hello.txt"), 11).content.length).toBe(11);
  });

  it("deletes a regular file and returns its info", () => {
    const info = deleteArtifact(root, id("sub/hello.txt"));
    expect(info).toMatchObject({ path: "sub/hello.txt", size: 11 });
    expect(existsSync(join(root, "sub", "hello.txt"))).toBe(false);
    expectApiError(() => statArtifact(root, id("sub/hello.txt")), "not_found");
  });
});

describe("listArtifacts", () => {
  beforeEach(() => {
    const files = ["b.txt", "a.txt", "a/z.txt", "a/b/c.txt", "a-b/x.txt", "a.d/y", "Z.md", "deep/er/est/f"];
    for (const f of files) {
      mkdirSync(join(root, f, ".."), { recursive: true });
      writeFileSync(join(root, f), f);
    }
    for (const skipped of [
      ".git/HEAD",
      "node_modules/pkg/index.js",
      ".codex/config.toml",
      "a/node_modules/x.js",
    ]) {
      mkdirSync(join(root, skipped, ".."), { recursive: true });
      writeFileSync(join(root, skipped), "skip");
    }
    symlinkSync(outside, join(root, "outlink"));
    symlinkSync("b.txt", join(root, "inlink.txt"));
    mkdirSync(join(root, "empty"));
  });

  const expected = ["Z.md", "a-b/x.txt", "a.d/y", "a.txt", "a/b/c.txt", "a/z.txt", "b.txt", "deep/er/est/f"];

  it("lists regular files sorted by relative path, skipping vendored dirs and symlinks", () => {
    const { data, has_more } = listArtifacts(root);
    expect(data.map((a) => a.path)).toEqual(expected);
    expect([...expected].sort()).toEqual(expected);
    expect(has_more).toBe(false);
    const first = data[0]!;
    expect(first.id).toBe(id("Z.md"));
    expect(first.absPath).toBe(join(realRoot, "Z.md"));
    expect(first.size).toBe(4);
  });

  it("paginates with limit and an exclusive after cursor", () => {
    const pages: string[][] = [];
    let after: string | undefined;
    for (;;) {
      const page = listArtifacts(root, { limit: 3, ...(after ? { after } : {}) });
      pages.push(page.data.map((a) => a.path));
      if (!page.has_more) break;
      after = page.data.at(-1)!.id;
    }
    expect(pages).toEqual([expected.slice(0, 3), expected.slice(3, 6), expected.slice(6)]);
    expect(listArtifacts(root, { limit: 8 }).has_more).toBe(false);
    expect(listArtifacts(root, { limit: 7 }).has_more).toBe(true);
  });

  it("accepts cursors that name missing paths or directories", () => {
    expect(listArtifacts(root, { after: id("a/a") }).data.map((a) => a.path)).toEqual(expected.slice(4));
    expect(listArtifacts(root, { after: id("a/") }).data.map((a) => a.path)).toEqual(expected.slice(4));
    expect(listArtifacts(root, { after: id("a/zz") }).data.map((a) => a.path)).toEqual(expected.slice(6));
    expect(listArtifacts(root, { after: id("zzz") }).data).toEqual([]);
  });

  it("caps the page at maxEntries", () => {
    const res = listArtifacts(root, { maxEntries: 2 });
    expect(res.data.map((a) => a.path)).toEqual(expected.slice(0, 2));
    expect(res.has_more).toBe(true);
    expect(listArtifacts(root, { limit: 5, maxEntries: 2 }).data).toHaveLength(2);
  });

  it("returns an empty list for a missing root", () => {
    expect(listArtifacts(join(base, "nope"))).toEqual({ data: [], has_more: false });
  });
});

describe("contentTypeFor", () => {
  it("maps extensions", () => {
    expect(contentTypeFor("a/b.txt")).toBe("text/plain; charset=utf-8");
    expect(contentTypeFor("README.MD")).toBe("text/markdown; charset=utf-8");
    expect(contentTypeFor("x.json")).toBe("application/json; charset=utf-8");
    expect(contentTypeFor("x.html")).toBe("text/html; charset=utf-8");
    expect(contentTypeFor("x.csv")).toBe("text/csv; charset=utf-8");
    expect(contentTypeFor("x.png")).toBe("image/png");
    expect(contentTypeFor("x.jpg")).toBe("image/jpeg");
    expect(contentTypeFor("x.pdf")).toBe("application/pdf");
    expect(contentTypeFor("x.zip")).toBe("application/zip");
    expect(contentTypeFor("Makefile")).toBe("application/octet-stream");
    expect(contentTypeFor("x.unknownext")).toBe("application/octet-stream");
  });
});

describe("writeUpload", () => {
  it("writes a file, creating parent dirs, and returns the absolute path and size", () => {
    const res = writeUpload(root, {
      path: join(root, "n1/n2/e2e_artifact.txt"),
      content_base64: b64("hi there"),
    });
    expect(res).toEqual({ path: join(realRoot, "n1/n2/e2e_artifact.txt"), bytes: 8 });
    expect(readFileSync(join(root, "n1/n2/e2e_artifact.txt"), "utf8")).toBe("hi there");
    expect(readArtifact(root, id("n1/n2/e2e_artifact.txt")).content.toString()).toBe("hi there");
    // no temp files left behind
    expect(readdirSync(join(root, "n1/n2"))).toEqual(["e2e_artifact.txt"]);
  });

  it("overwrites an existing file and writes binary content", () => {
    writeFileSync(join(root, "f.bin"), "old");
    const bytes = Buffer.from([0, 255, 1, 254, 128]);
    expect(writeUpload(root, { path: join(root, "f.bin"), content_base64: b64(bytes) }).bytes).toBe(5);
    expect(readFileSync(join(root, "f.bin"))).toEqual(bytes);
  });

  it("resolves a relative path against the root", () => {
    const res = writeUpload(root, { path: "rel/dir/x.txt", content_base64: b64("abc") });
    expect(res).toEqual({ path: join(realRoot, "rel/dir/x.txt"), bytes: 3 });
    expect(readFileSync(join(root, "rel/dir/x.txt"), "utf8")).toBe("abc");
  });

  it("accepts an absolute path through a symlinked root", () => {
    const linkRoot = join(base, "root-link");
    symlinkSync(root, linkRoot);
    const res = writeUpload(linkRoot, { path: join(linkRoot, "via-link.txt"), content_base64: b64("x") });
    expect(res.path).toBe(join(realRoot, "via-link.txt"));
    expect(existsSync(join(root, "via-link.txt"))).toBe(true);
  });

  it("400s a missing or empty path", () => {
    for (const body of [
      { content_base64: b64("x") },
      { path: "", content_base64: b64("x") },
      { path: 3 },
      null,
      [],
    ]) {
      expectApiError(() => writeUpload(root, body), "bad_request", "Missing 'path'");
    }
  });

  it("400s missing, empty or non-string content", () => {
    for (const content_base64 of [undefined, "", 42, null, ["aGk="]]) {
      expectApiError(
        () => writeUpload(root, { path: join(root, "x.txt"), content_base64 }),
        "bad_request",
        "Missing or invalid 'content_base64'",
      );
    }
    expect(existsSync(join(root, "x.txt"))).toBe(false);
  });

  it("400s invalid base64 (length, alphabet, padding)", () => {
    for (const bad of [
      "aGk",
      "aGk=x",
      "aGk*",
      "aG=k",
      "a===",
      "====",
      "aGk=\n",
      "aGVsbG8-",
      "aGVsbG8_",
      " aGk",
    ]) {
      expectApiError(
        () => writeUpload(root, { path: join(root, "x.txt"), content_base64: bad }),
        "bad_request",
        /^Invalid base64: /,
      );
    }
    expect(existsSync(join(root, "x.txt"))).toBe(false);
  });

  it("403s escapes via .., absolute paths outside, and symlinked dirs", () => {
    symlinkSync(outside, join(root, "out"));
    symlinkSync(join(outside, "new-target.txt"), join(root, "dangling.txt"));
    const attempts = [
      join(root, "../outside/pwned.txt"),
      "../outside/pwned.txt",
      join(outside, "pwned.txt"),
      "/etc/pwned",
      join(root, "out/pwned.txt"),
      "out/deeper/pwned.txt",
      "dangling.txt",
    ];
    for (const path of attempts) {
      expectApiError(() => writeUpload(root, { path, content_base64: b64("x") }), "forbidden", ESCAPES);
    }
    expect(readdirSync(outside)).toEqual(["secret.txt"]);
  });

  it("413s content over maxBytes", () => {
    expectApiError(
      () => writeUpload(root, { path: "big.bin", content_base64: b64("12345") }, 4),
      "payload_too_large",
    );
    expect(writeUpload(root, { path: "ok.bin", content_base64: b64("1234") }, 4).bytes).toBe(4);
  });

  it("400s writing onto a directory", () => {
    mkdirSync(join(root, "d"));
    expectApiError(() => writeUpload(root, { path: "d", content_base64: b64("x") }), "bad_request");
    expectApiError(() => writeUpload(root, { path: root, content_base64: b64("x") }), "bad_request");
  });
});

describe("paths clients see (environment-paths)", () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), "cas-envpaths-"));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it("a session's workspace is /workspace to its clients, or the directory a client chose", () => {
    expect(environmentRoot({ extra: {} })).toBe("/workspace");
    expect(environmentRoot({ extra: { environment: "openai_hosted" } })).toBe("/workspace");
    expect(environmentRoot({ extra: { workspace_directory: "/srv/project" } })).toBe("/srv/project");
    expect(environmentPath("/workspace", "")).toBe("/workspace");
    expect(environmentPath("/workspace", "out/a.txt")).toBe("/workspace/out/a.txt");
  });

  it("maps host paths inside the workspace (as given or through a symlink), nothing else", () => {
    const real = join(base, "real", "sess_1");
    mkdirSync(real, { recursive: true });
    symlinkSync(join(base, "real"), join(base, "link"));
    const given = join(base, "link", "sess_1");
    const paths = hostPathsOf({ workspace: given, extra: {} });
    expect(paths.map(given)).toBe("/workspace");
    expect(paths.map(`${given}/`)).toBe("/workspace");
    expect(paths.map(join(given, "src", "app.py"))).toBe("/workspace/src/app.py");
    expect(paths.map(join(realpathSync(real), "out.txt"))).toBe("/workspace/out.txt");
    // Another directory that merely starts the same, another session's, relative and system paths: unchanged.
    expect(paths.map(`${given}-other/x`)).toBe(`${given}-other/x`);
    expect(paths.map(join(base, "real", "sess_2", "x"))).toBe(join(base, "real", "sess_2", "x"));
    expect(paths.map("src/app.py")).toBe("src/app.py");
    expect(paths.map("/usr/bin/env")).toBe("/usr/bin/env");
    expect(paths.mapOptional(null)).toBeNull();
    // A directory the client chose maps to itself.
    const chosen = hostPathsOf({ workspace: real, extra: { workspace_directory: real } });
    expect(chosen.map(join(real, "a"))).toBe(join(real, "a"));
  });
});
