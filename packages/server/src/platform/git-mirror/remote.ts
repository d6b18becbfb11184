/**
 * How the service's own git talks to a client's remote: only the protocols the remote's kind needs (never `ext::`,
 * never `file` for a network remote), no redirects (a redirect could lead to a private address the guard refused),
 * no credential helper or prompt of the host, the name pinned to the address the outbound guard checked, and the
 * credential — an `Authorization` header — sent only to URLs under the credential's own prefix. All of that goes in
 * a configuration file of its own (mode 0600, under the service's directory, removed after the call) given to git
 * as its global configuration: the secret is never on a command line or in an environment variable (other
 * processes of the same user could read those in /proc), never in a repository's config, never where an agent's
 * sandbox can see.
 */
import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GitError } from "../git-store/git.js";

/** A remote as the service's git is given it. */
export interface Remote {
  /** An http(s) or git URL, or an absolute path on this machine (`kind: "local"`). */
  url: string;
  kind: "https" | "http" | "git" | "local";
  /** The header value to send (`Basic …`), only to URLs starting with `prefix`; null: none. */
  auth: { header: string; prefix: string } | null;
  /** Connect `host:port` to this address (the one the outbound guard checked); null: git resolves the name. */
  pin: { host: string; port: number; address: string } | null;
}

/** A value as a git config file reads it back (quoted, `"` and `\` escaped, no newline possible). */
const quoted = (v: string) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`).replace(/[\r\n]/g, " ")}"`;

/** The configuration of one call to a remote. */
export function remoteConfig(remote: Remote): string {
  const lines = [
    "[protocol]",
    "\tallow = never",
    `[protocol ${quoted(remote.kind === "local" ? "file" : remote.kind)}]`,
    "\tallow = always",
    "[http]",
    "\tfollowRedirects = false",
    ...(remote.pin
      ? [
          `\tcurloptResolve = ${quoted(`${remote.pin.host}:${remote.pin.port}:${remote.pin.address.includes(":") ? `[${remote.pin.address}]` : remote.pin.address}`)}`,
        ]
      : []),
    "[credential]",
    '\thelper = ""',
    "[core]",
    '\taskPass = ""',
    '\tsshCommand = "false"',
    "[gc]",
    "\tauto = 0",
    // Objects are checked as they arrive (a tree naming `.git` or a hostile `.gitmodules` is refused), but not
    // for the cosmetic faults old repositories often carry.
    "[fetch]",
    "\tfsckObjects = true",
    '[fetch "fsck"]',
    "\tzeroPaddedFilemode = ignore",
    "\tbadTimezone = ignore",
    "\tmissingSpaceBeforeDate = ignore",
    "\tbadDate = ignore",
    "\tmissingEmail = ignore",
    "[transfer]",
    "\tfsckObjects = true",
  ];
  if (remote.auth) {
    lines.push(
      `[http ${quoted(remote.auth.prefix)}]`,
      `\textraHeader = ${quoted(`Authorization: ${remote.auth.header}`)}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Runs `fn` with the variables that give git the remote's configuration (a file written under `scratch` for the
 * call, removed after it whatever happens).
 */
export async function withRemote<T>(
  scratch: string,
  remote: Remote,
  fn: (env: Record<string, string>) => Promise<T>,
): Promise<T> {
  await mkdir(scratch, { recursive: true, mode: 0o700 });
  const file = join(scratch, `remote-${randomBytes(8).toString("hex")}.gitconfig`);
  await writeFile(file, remoteConfig(remote), { mode: 0o600 });
  try {
    return await fn({
      GIT_CONFIG_GLOBAL: file,
      GIT_PROTOCOL_FROM_USER: "0",
      GIT_ASKPASS: "",
      SSH_ASKPASS: "",
    });
  } finally {
    await rm(file, { force: true });
  }
}

/** What a failed git call said (its stderr, else its message), scrubbed of what must not leave the service. */
export function gitFailure(err: unknown, remote: Remote): string {
  const why = err instanceof GitError ? err.stderr.trim() || err.message : String(err);
  return scrubbed(why, remote);
}

/** Replaces what must not leave the service (the credential, the pinned address) in git's messages. */
export function scrubbed(text: string, remote: Remote): string {
  let out = text;
  if (remote.auth) out = out.split(remote.auth.header).join("[credential]");
  return out.replace(/(https?:\/\/)[^/@\s]+@/g, "$1");
}
