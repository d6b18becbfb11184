// A system bubblewrap the engine cannot use as it is (Debian 12's 0.8.0: no --argv0) first on PATH: without the
// helper directory every sandboxed command fails (`bwrap: execvp codex-linux-sandbox`); with it, commands run under
// the permission profile as usual. The real Debian binary is taken from Debian's package (apt-get download, cached
// under node_modules/.cache like the test venvs).
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findSystemBwrap } from "@codex-agent-api/codex";
import { afterAll, describe, expect, it } from "vitest";
import { startServer } from "../../support/fixture.js";

const root = fileURLToPath(new URL("../../../../../", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "cas-bwrap-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A directory with Debian's own bwrap (the version the distribution ships), fetched once. */
function debianBwrapDir(): string {
  const cache = join(root, "node_modules/.cache/debian-bwrap");
  const bin = join(cache, "usr/bin");
  if (existsSync(join(bin, "bwrap"))) return bin;
  mkdirSync(cache, { recursive: true });
  const download = join(cache, "deb");
  mkdirSync(download, { recursive: true });
  execFileSync("apt-get", ["download", "bubblewrap"], { cwd: download, stdio: "pipe" });
  const deb = execFileSync("sh", ["-c", "ls *.deb"], { cwd: download, encoding: "utf8" }).trim();
  execFileSync("dpkg-deb", ["-x", join(download, deb), cache]);
  return bin;
}

function fakeBwrap(dir: string, help: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "bwrap");
  writeFileSync(
    file,
    `#!/bin/sh\ncase "$1" in --version) echo "bubblewrap 0.7.9";; *) echo "${help}";; esac\n`,
  );
  chmodSync(file, 0o755);
  return dir;
}

describe("a system bubblewrap on PATH", () => {
  it("is found with its version and whether it has --argv0", () => {
    const old = fakeBwrap(join(scratch, "old"), "usage: bwrap [OPTIONS...] --args FD");
    const recent = fakeBwrap(join(scratch, "new"), "usage: bwrap --argv0 VALUE --args FD");
    expect(findSystemBwrap([join(scratch, "none"), old, recent].join(delimiter))).toEqual({
      path: join(old, "bwrap"),
      version: "0.7.9",
      argv0: false,
    });
    expect(findSystemBwrap(recent)?.argv0).toBe(true);
    expect(findSystemBwrap(join(scratch, "none"))).toBeNull();
  });

  it("Debian 12's 0.8.0 first on PATH: commands still run under the permission profile", async () => {
    const dir = debianBwrapDir();
    expect(findSystemBwrap(dir)).toMatchObject({ version: "0.8.0", argv0: false });
    const saved = process.env.PATH;
    process.env.PATH = [dir, saved].join(delimiter);
    let f: Awaited<ReturnType<typeof startServer>>;
    try {
      // prepareCodexHome reads PATH when the service starts.
      f = await startServer();
    } finally {
      process.env.PATH = saved;
    }
    try {
      const created = await f.json<{
        status: string;
        output: Array<{ item: { type: string; aggregated_output?: string; exit_code?: number } }>;
      }>("POST", "/v1/agents/sessions", {
        agent: { model: "mock-model" },
        input:
          "Run this exact shell command and wait for it to finish: echo inside-$((6*7)); ls / | grep -c . ; " +
          `cat ${join(f.dataDir, "agents.db")} >/dev/null && echo leaked. Then reply with exactly: done`,
      });
      expect(created.status).toBe(200);
      expect(created.body.status).toBe("idle");
      const command = created.body.output.find((o) => o.item.type === "command_execution")?.item;
      expect(command?.aggregated_output).toMatch(/^inside-42\n/);
      // Still the permission profile: the service's data is out of reach.
      expect(command?.aggregated_output).not.toMatch(/leaked/);
      expect(f.service.codexHome.bwrap).toMatchObject({ version: "0.8.0", argv0: false });
      expect(f.service.codexHome.bwrap?.helperDir).toBe(join(f.dataDir, "engine-path"));
    } finally {
      await f.close();
    }
  });
});
