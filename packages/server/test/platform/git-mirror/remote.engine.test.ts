// What the service's git is told about a client's remote: only its protocol, no redirects, no helper, the pinned
// address, the credential scoped to its prefix; and what is scrubbed from git's messages.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Remote, remoteConfig, scrubbed } from "../../../src/platform/git-mirror/remote.js";

const remote: Remote = {
  url: "https://git.example.com/org/repo.git",
  kind: "https",
  auth: { header: "Basic YWxpY2U6cHc=", prefix: 'https://git.example.com/org/"x' },
  pin: { host: "git.example.com", port: 443, address: "2001:db8::1" },
};

/** The configuration as git itself reads it back (key=value lines). */
function asGitReadsIt(text: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "cas-remote-"));
  try {
    writeFileSync(join(dir, "config"), text);
    return execFileSync("git", ["config", "--file", join(dir, "config"), "--list"], { encoding: "utf8" })
      .trim()
      .split("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("remote configuration", () => {
  it("allows the remote's protocol only, no redirects or helpers, pins the address, scopes the header", () => {
    const lines = asGitReadsIt(remoteConfig(remote));
    expect(lines).toContain("protocol.allow=never");
    expect(lines).toContain("protocol.https.allow=always");
    expect(lines.filter((l) => l.startsWith("protocol.") && l.endsWith("=always"))).toHaveLength(1);
    expect(lines).toContain("http.followredirects=false");
    expect(lines).toContain("credential.helper=");
    expect(lines).toContain("fetch.fsckobjects=true");
    expect(lines).toContain("fetch.fsck.zeropaddedfilemode=ignore");
    expect(lines).toContain("http.curloptresolve=git.example.com:443:[2001:db8::1]");
    // The header is under the credential's prefix only (a quote in it cannot end the section).
    expect(lines).toContain(
      'http.https://git.example.com/org/"x.extraheader=Authorization: Basic YWxpY2U6cHc=',
    );
    expect(lines.filter((l) => l.includes("extraheader"))).toHaveLength(1);
  });

  it("a local remote gets the file protocol only, and no header", () => {
    const lines = asGitReadsIt(remoteConfig({ url: "/srv/r.git", kind: "local", auth: null, pin: null }));
    expect(lines).toContain("protocol.file.allow=always");
    expect(lines.some((l) => l.includes("extraheader") || l.includes("curloptresolve"))).toBe(false);
  });

  it("scrubs the credential and any user info from git's messages", () => {
    expect(scrubbed("fatal: sent Basic YWxpY2U6cHc= to https://bob:pw@h/x", remote)).toBe(
      "fatal: sent [credential] to https://h/x",
    );
  });
});
