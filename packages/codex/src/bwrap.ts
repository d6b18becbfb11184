/**
 * The engine's Linux sandbox and a system bubblewrap. The engine's sandbox helper prefers a `bwrap` found on PATH
 * over the one it bundles. A bwrap older than 0.9.0 (Debian 12's 0.8.0, installed with flatpak on many desktops)
 * has no `--argv0`, so the helper then asks bwrap to exec its inner command by the bare name `codex-linux-sandbox`
 * from PATH — a name that exists only in a helper directory the engine refuses to create when its home is under a
 * temporary directory. Every turn then fails (`bwrap: execvp codex-linux-sandbox: No such file or directory`).
 *
 * The remedy: a directory holding `codex-linux-sandbox` (a symlink to the engine binary) first on the engine's PATH,
 * readable inside the sandbox (the permission profiles list it). It is set up only when such a bwrap is found.
 */
import { execFileSync } from "node:child_process";
import { accessSync, constants, lstatSync, mkdirSync, readlinkSync, symlinkSync, unlinkSync } from "node:fs";
import { delimiter, join } from "node:path";

export interface SystemBwrap {
  path: string;
  version: string | null;
  /** Whether it has `--argv0` (0.9.0 and later): the engine can use it as it is. */
  argv0: boolean;
}

/** The first executable `bwrap` on this PATH, or null (the engine then uses its bundled bubblewrap). */
export function findSystemBwrap(path = process.env.PATH ?? ""): SystemBwrap | null {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, "bwrap");
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    const run = (arg: string): string => {
      try {
        return execFileSync(candidate, [arg], {
          encoding: "utf8",
          timeout: 5_000,
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (err) {
        // `--help` exits 0 on most versions; some print usage and exit non-zero: read what they printed.
        const e = err as { stdout?: string; stderr?: string };
        return `${e.stdout ?? ""}${e.stderr ?? ""}`;
      }
    };
    const version = /bubblewrap\s+([0-9][0-9.]*)/.exec(run("--version"))?.[1] ?? null;
    return { path: candidate, version, argv0: run("--help").includes("--argv0") };
  }
  return null;
}

/** The helper directory's name under the data directory. */
export const BWRAP_HELPER_DIR = "engine-path";

/**
 * When `bwrap` is one the engine cannot use as it is, makes `<dataDir>/engine-path/codex-linux-sandbox` (a symlink
 * to the engine binary) and returns that directory, to be put first on the engine's PATH (and on any PATH the
 * caller gives commands) and made readable by the sandbox if it restricts reads; else null.
 */
export function bwrapHelperDir(
  dataDir: string,
  codexBinary: string,
  bwrap: SystemBwrap | null,
): string | null {
  if (!bwrap || bwrap.argv0) return null;
  const dir = join(dataDir, BWRAP_HELPER_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const link = join(dir, "codex-linux-sandbox");
  let current: string | null = null;
  try {
    if (lstatSync(link).isSymbolicLink()) current = readlinkSync(link);
    else unlinkSync(link);
  } catch {
    // not there yet
  }
  if (current !== codexBinary) {
    if (current !== null) unlinkSync(link);
    symlinkSync(codexBinary, link);
  }
  return dir;
}
