// The service's sandboxes (real Podman, the real egress proxy): a sandbox's only way out is its proxy endpoint, and
// the network policy decides what it reaches. Targets are test hosts on this machine under names the proxy's
// resolver maps (mirror.test → 127.0.0.2, allowed as an operator's private range); 127.0.0.3 stands for this
// service (its listener is a service address: never reached).

import { rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { placeholderFor } from "@codex-agent-api/egress";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandboxes } from "../../../src/platform/sandbox/sandboxes.js";
import {
  containersWithPrefix,
  ensureSandboxImage,
  mountsUnder,
  sandboxPrefix,
  sandboxRoot,
} from "../../support/sandbox.js";

const root = sandboxRoot("svc");
const prefix = sandboxPrefix("svc");
let sandboxes: Sandboxes;
const servers: Server[] = [];
interface Seen {
  host: string | undefined;
  authorization: string | undefined;
  key: string | undefined;
  url: string | undefined;
}
const seen: Seen[] = [];

async function listen(host: string, port: number, body: string): Promise<void> {
  const s = createServer((req, res) => {
    const key = req.headers["x-mirror-key"];
    seen.push({
      host: req.headers.host,
      authorization: req.headers.authorization,
      key: typeof key === "string" ? key : undefined,
      url: req.url,
    });
    res.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(port, host, () => resolve());
  });
  servers.push(s);
}

beforeAll(async () => {
  await ensureSandboxImage();
  await listen("127.0.0.2", 80, "mirror says hi\n");
  await listen("127.0.0.3", 80, "the service itself\n");
  sandboxes = await Sandboxes.open({
    rootDir: root,
    warm: 0,
    defaultSize: "small",
    maximums: {},
    defaults: { diskBytes: 256 * 1024 ** 2, pids: 256 },
    idleStopMs: 0,
    serviceAddresses: ["127.0.0.3:80"],
    allowPrivate: ["127.0.0.2/32", "127.0.0.3/32"],
    hosts: { "mirror.test": "127.0.0.2", "other.test": "127.0.0.2", "service.test": "127.0.0.3" },
    logger: pino({ level: "silent" }),
    namePrefix: prefix,
  });
}, 300_000);

afterAll(async () => {
  for (const id of ["sb-restricted", "sb-enabled", "sb-disabled", "sb-secrets"]) {
    await sandboxes?.destroy(id).catch(() => undefined);
  }
  await sandboxes?.close();
  for (const s of servers) s.close();
  expect(containersWithPrefix(prefix)).toEqual([]);
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

const curl = async (id: string, url: string) =>
  (await sandboxes.run(id, `curl -s -m 10 -o - -w ' [%{http_code}]' ${url} 2>&1; echo " rc=$?"`)).stdout;

describe("a sandbox's network is its proxy endpoint", () => {
  it("restricted: an allowed name is reached; other names, loopback, metadata and this service are refused", async () => {
    await sandboxes.create("sb-restricted", {
      network: { access: "restricted", allowed: ["mirror.test", "service.test"], blocked: [] },
    });
    expect(await curl("sb-restricted", "http://mirror.test/")).toMatch(/^mirror says hi\n \[200\] rc=0/);
    expect(await curl("sb-restricted", "http://other.test/")).toMatch(/"reason":"not_allowed".* \[403\]/s);
    expect(await curl("sb-restricted", "http://127.0.0.1/")).toMatch(/\[403\]/);
    expect(await curl("sb-restricted", "http://169.254.169.254/latest/meta-data/")).toMatch(/\[403\]/);
    expect(await curl("sb-restricted", "http://service.test/")).toMatch(
      /"reason":"service_address".*\[403\]/s,
    );
    // No way around the proxy: direct connections and DNS fail inside.
    const direct = await sandboxes.run(
      "sb-restricted",
      "curl -s -m 5 --noproxy '*' http://127.0.0.2/ ; echo rc=$?; getent hosts mirror.test || echo no-dns",
    );
    expect(direct.stdout).toMatch(/rc=7/);
    expect(direct.stdout).toMatch(/no-dns/);
    expect(seen.filter((s) => s.host === "service.test")).toEqual([]);
  });

  it("enabled: any public name (here the operator's private range), still never private addresses", async () => {
    await sandboxes.create("sb-enabled", { network: { access: "enabled" } });
    expect(await curl("sb-enabled", "http://other.test/")).toMatch(/mirror says hi\n \[200\]/);
    expect(await curl("sb-enabled", "http://10.0.0.1/")).toMatch(/\[403\]/);
    expect(await curl("sb-enabled", "http://localhost/")).toMatch(/\[403\]/);
  });

  it("disabled: no endpoint at all; a later policy change opens one at once", async () => {
    await sandboxes.create("sb-disabled", { network: { access: "disabled" } });
    expect(await curl("sb-disabled", "http://mirror.test/")).toMatch(/\[000\] rc=(5|7|56)/);
    await sandboxes.updateNetwork("sb-disabled", {
      access: "restricted",
      allowed: ["mirror.test"],
      blocked: [],
    });
    expect(await curl("sb-disabled", "http://mirror.test/")).toMatch(/\[200\]/);
    await sandboxes.updateNetwork("sb-disabled", { access: "disabled" });
    expect(await curl("sb-disabled", "http://mirror.test/")).toMatch(/\[000\]/);
  });

  it("secrets reach their host only, by header or by placeholder, and are nowhere inside", async () => {
    const placeholder = placeholderFor("MIRROR_TOKEN", "cred_1");
    await sandboxes.create("sb-secrets", {
      network: { access: "restricted", allowed: ["mirror.test", "other.test"], blocked: [] },
      secrets: {
        headers: [{ hosts: ["mirror.test"], headers: { "X-Mirror-Key": "header-secret-1" } }],
        substitutions: [{ placeholder, value: "placeholder-secret-2", hosts: ["mirror.test"] }],
      },
    });
    seen.length = 0;
    const out = await sandboxes.run(
      "sb-secrets",
      `curl -s -H "Authorization: Bearer $MIRROR_TOKEN" http://mirror.test/a; curl -s -H "Authorization: Bearer $MIRROR_TOKEN" http://other.test/b; env; cat /proc/self/environ | tr '\\0' '\\n'; grep -rs secret- /workspace /tmp /run 2>/dev/null; true`,
      { env: { MIRROR_TOKEN: placeholder } },
    );
    expect(seen).toEqual([
      {
        host: "mirror.test",
        authorization: "Bearer placeholder-secret-2",
        key: "header-secret-1",
        url: "/a",
      },
      { host: "other.test", authorization: `Bearer ${placeholder}`, key: undefined, url: "/b" },
    ]);
    expect(out.stdout).not.toMatch(/header-secret-1|placeholder-secret-2/);
    expect(out.stdout).toContain(placeholder);
  });
});
