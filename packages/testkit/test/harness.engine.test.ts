import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { codexConfigToml, createCodexHome, startMockEnvironment } from "../src/index.js";
import { findCodexBinary } from "./helpers.js";

const run = promisify(execFile);
const bin = findCodexBinary();

/** `codex app-server --print-startup-config --strict-config` with this CODEX_HOME. */
async function strictCheck(env: Record<string, string>): Promise<{ ok: boolean; stdout: string }> {
  try {
    const { stdout } = await run(bin!, ["app-server", "--print-startup-config", "--strict-config"], {
      env: { ...process.env, ...env },
      timeout: 30_000,
    });
    return { ok: true, stdout };
  } catch (err) {
    return { ok: false, stdout: String((err as { stdout?: string }).stdout ?? err) };
  }
}

describe("codexConfigToml", () => {
  it("writes the offline settings and the mock provider", () => {
    const toml = codexConfigToml({ providerUrl: "http://127.0.0.1:1234/v1" });
    expect(toml).toBe(
      [
        'model = "mock-model"',
        'model_provider = "mock"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "check_for_update_on_startup = false",
        "",
        "[features]",
        "goals = true",
        "plugins = false",
        "shell_snapshot = false",
        "instant_interrupt = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[model_providers.mock]",
        'name = "Mock Responses API"',
        'base_url = "http://127.0.0.1:1234/v1"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
      ].join("\n"),
    );
  });

  it("applies the options", () => {
    const toml = codexConfigToml({
      providerUrl: "http://x/v1",
      model: 'we"ird',
      approvalPolicy: "untrusted",
      sandboxMode: "workspace-write",
      instantInterrupt: true,
      envKey: "MOCK_LLM_KEY",
      extraToml: '[shell_environment_policy]\ninherit = "all"\n',
    });
    expect(toml).toContain('model = "we\\"ird"');
    expect(toml).toContain('approval_policy = "untrusted"');
    expect(toml).toContain('sandbox_mode = "workspace-write"');
    expect(toml).toContain("instant_interrupt = true");
    expect(toml).toContain('stream_max_retries = 0\nenv_key = "MOCK_LLM_KEY"\n');
    expect(toml.endsWith('\n[shell_environment_policy]\ninherit = "all"\n')).toBe(true);
  });
});

describe("createCodexHome", () => {
  it("creates codex-home, workspace and home in a temp dir and removes them on dispose", async () => {
    const home = await createCodexHome({
      mockUrl: "http://127.0.0.1:1/v1",
      envKey: "K",
      envKeyValue: "secret",
    });
    expect(home.env).toEqual({
      CODEX_HOME: home.codexHome,
      HOME: join(home.codexHome, "..", "home"),
      CODEX_APP_SERVER_DISABLE_MANAGED_CONFIG: "1",
      RUST_LOG: "warn",
      K: "secret",
    });
    expect(await readFile(join(home.codexHome, "config.toml"), "utf8")).toContain(
      'base_url = "http://127.0.0.1:1/v1"',
    );
    expect(existsSync(home.workspace)).toBe(true);
    expect(readdirSync(home.env.HOME!)).toEqual([]);
    await home.dispose();
    expect(existsSync(home.codexHome)).toBe(false);
    expect(existsSync(join(home.codexHome, ".."))).toBe(false);
  });

  it("with an explicit dir, only removes what it created", async () => {
    const dir = await mkdtemp(join(tmpdir(), "testkit-home-"));
    try {
      const home = await createCodexHome({ mockUrl: "http://127.0.0.1:1/v1", dir });
      expect(home.codexHome).toBe(join(dir, "codex-home"));
      expect(home.workspace).toBe(join(dir, "workspace"));
      expect(home.env.HOME).toBe(join(dir, "home"));
      await home.dispose();
      expect(existsSync(home.codexHome)).toBe(false);
      expect(existsSync(home.env.HOME!)).toBe(false);
      expect(existsSync(dir)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("config accepted by the real engine (--strict-config)", () => {
  // The pinned binary comes with `npm ci` (@openai/codex): missing is a broken install, not a reason to skip.
  beforeAll(() => {
    if (!bin) throw new Error("the pinned Codex binary (@openai/codex) is missing: run npm ci");
  });
  it("default and fully optioned configs validate; an unknown key does not", async () => {
    const env = await startMockEnvironment();
    const optioned = await createCodexHome({
      mockUrl: env.mock.url,
      approvalPolicy: "on-request",
      sandboxMode: "workspace-write",
      instantInterrupt: true,
      envKey: "MOCK_LLM_KEY",
    });
    const broken = await createCodexHome({ mockUrl: env.mock.url, extraToml: "[tui]\nnot_a_key = 1" });
    try {
      const [a, b, c] = await Promise.all([
        strictCheck(env.home.env),
        strictCheck(optioned.env),
        strictCheck(broken.env),
      ]);
      expect(a.ok, a.stdout).toBe(true);
      expect(JSON.parse(a.stdout)).toMatchObject({ appServerVersion: expect.any(String) });
      expect(b.ok, b.stdout).toBe(true);
      expect(c.ok).toBe(false);
      expect(c.stdout).toContain("unknown configuration field `tui.not_a_key`");
    } finally {
      await Promise.all([env.close(), optioned.dispose(), broken.dispose()]);
    }
  });
});
