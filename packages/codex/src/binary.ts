import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const TARGETS: Record<string, string> = {
  "linux-x64": "x86_64-unknown-linux-musl",
  "linux-arm64": "aarch64-unknown-linux-musl",
  "darwin-x64": "x86_64-apple-darwin",
  "darwin-arm64": "aarch64-apple-darwin",
  "win32-x64": "x86_64-pc-windows-msvc",
  "win32-arm64": "aarch64-pc-windows-msvc",
};

/**
 * Path of the platform binary shipped by the pinned `@openai/codex` package.
 * We spawn it directly instead of going through the package's Node launcher (one process less).
 */
export function resolveCodexBinary(): string {
  const key = `${process.platform}-${process.arch}`;
  const triple = TARGETS[key];
  if (!triple) throw new Error(`unsupported platform for the Codex binary: ${key}`);
  const require = createRequire(import.meta.url);
  const launcher = require.resolve("@openai/codex/package.json");
  const platformPkg = require.resolve(`@openai/codex-${key}/package.json`, { paths: [dirname(launcher)] });
  const exe = process.platform === "win32" ? "codex.exe" : "codex";
  const bin = join(dirname(platformPkg), "vendor", triple, "bin", exe);
  if (!existsSync(bin)) throw new Error(`the Codex binary is missing at ${bin}; reinstall @openai/codex`);
  return bin;
}
