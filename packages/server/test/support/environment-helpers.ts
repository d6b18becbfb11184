// Helpers of the environments and vaults suites: packages built offline (an npm tarball, a Python wheel), the
// scripted model's shell directive, a turn running a command, what a session's commands printed, and a search for a
// secret in files.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type OpenAI from "openai";
import { waitFor } from "./fixture.js";
import { messageEvent } from "./openai-helpers.js";

/** The scripted model runs CMD in the workspace, then replies REPLY. */
export const shell = (cmd: string, reply = "done") =>
  `Run this exact shell command and wait for it to finish: ${cmd}. Then reply with exactly: ${reply}`;

export const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** A tiny npm package (a `tiny-cli` command printing `tiny-ok`, and `require("tiny").value === "tiny-value"`). */
export function npmTarball(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "cas-npm-"));
  try {
    const pkg = join(dir, "package");
    mkdirSync(pkg);
    writeFileSync(
      join(pkg, "package.json"),
      JSON.stringify({ name: "tiny", version: "1.0.0", main: "index.js", bin: { "tiny-cli": "cli.js" } }),
    );
    writeFileSync(join(pkg, "index.js"), 'module.exports = { value: "tiny-value" };\n');
    writeFileSync(join(pkg, "cli.js"), '#!/usr/bin/env node\nconsole.log("tiny-ok");\n', { mode: 0o755 });
    execFileSync("tar", ["-czf", join(dir, "tiny.tgz"), "-C", dir, "package"]);
    return readFileSync(join(dir, "tiny.tgz"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A tiny pure-Python wheel (`import tinypy; tinypy.VALUE == "py-ok"`), made with the standard library. */
export function pythonWheel(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "cas-whl-"));
  try {
    const out = join(dir, "tinypy-0.1-py3-none-any.whl");
    const script = [
      "import base64, hashlib, sys, zipfile",
      "files = {",
      "  'tinypy/__init__.py': b'VALUE = \"py-ok\"\\n',",
      "  'tinypy-0.1.dist-info/METADATA': b'Metadata-Version: 2.1\\nName: tinypy\\nVersion: 0.1\\n',",
      "  'tinypy-0.1.dist-info/WHEEL': b'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',",
      "}",
      "def h(b): return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()",
      "record = ''.join(f'{n},{h(b)},{len(b)}\\n' for n, b in files.items()) + 'tinypy-0.1.dist-info/RECORD,,\\n'",
      "with zipfile.ZipFile(sys.argv[1], 'w') as z:",
      "  for n, b in files.items(): z.writestr(n, b)",
      "  z.writestr('tinypy-0.1.dist-info/RECORD', record)",
    ].join("\n");
    execFileSync("/usr/bin/python3", ["-c", script, out]);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every file below `dir` that contains `needle` (the data directory, the engine's state…). */
export function filesContaining(dir: string, needle: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) found.push(...filesContaining(path, needle));
    else if (st.isFile() && st.size < 50 * 1024 * 1024 && readFileSync(path).includes(needle))
      found.push(path);
  }
  return found;
}

/** The output of the session's command items (in order), through the official SDK. */
/** Another turn of the session running `cmd` (the scripted model's shell directive): what its command printed. */
export async function commandTurn(client: OpenAI, sessionId: string, cmd: string): Promise<string> {
  const before = (await commandOutputs(client, sessionId)).length;
  await client.beta.agents.sessions.events.create(sessionId, { events: [messageEvent(shell(cmd))] });
  const outputs = await waitFor(
    async () => {
      const s = await client.beta.agents.sessions.retrieve(sessionId);
      const out = await commandOutputs(client, sessionId);
      return s.status === "idle" && out.length > before ? out : null;
    },
    60_000,
    "the turn's command",
  );
  return (outputs ?? []).slice(before).join("\n");
}

export async function commandOutputs(client: OpenAI, sessionId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const item of client.beta.agents.sessions.items.list(sessionId, { order: "asc" })) {
    const i = item as unknown as { type: string; output?: string | null };
    if (i.type === "command_execution") out.push(i.output ?? "");
  }
  return out;
}

/** Everything a client could read about a session, as one text (to look for what must never be there). */
export async function everythingAbout(client: OpenAI, sessionId: string): Promise<string> {
  const parts: unknown[] = [await client.beta.agents.sessions.retrieve(sessionId)];
  for await (const item of client.beta.agents.sessions.items.list(sessionId, { order: "asc" }))
    parts.push(item);
  for await (const turn of client.beta.agents.sessions.turns.list(sessionId)) parts.push(turn);
  return JSON.stringify(parts);
}
