// What the container backend cannot do yet is refused before the service starts anything (never accepted and run
// differently): instances sharing a database.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { checkSandboxConfig } from "../../src/main/service.js";

const CWD = "/srv/app";
const config = (...args: string[]) => loadConfig(["--data-dir", "/srv/app/.data", ...args], {}, CWD);

describe("the container backend's start-up checks", () => {
  it("the local backend takes every option", () => {
    expect(() => checkSandboxConfig(config("--allow-mcp-stdio"))).not.toThrow();
    expect(() =>
      checkSandboxConfig(config("--database-url", "postgres://127.0.0.1/x", "--allow-mcp-stdio")),
    ).not.toThrow();
  });

  it("the container backend alone starts", () => {
    expect(() => checkSandboxConfig(config("--sandbox-backend", "container"))).not.toThrow();
  });

  it("refuses instances sharing a database", () => {
    expect(() =>
      checkSandboxConfig(
        config("--sandbox-backend", "container", "--database-url", "postgres://127.0.0.1/x"),
      ),
    ).toThrow(/--database-url/);
  });

  it("takes stdio MCP servers (they run in the sessions' containers)", () => {
    expect(() =>
      checkSandboxConfig(config("--sandbox-backend", "container", "--allow-mcp-stdio")),
    ).not.toThrow();
  });
});
