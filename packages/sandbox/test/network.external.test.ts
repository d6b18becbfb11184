// Proxy mode: the only way out of the container is the egress proxy's unix socket (here a stub HTTP server on a unix
// socket, standing in for packages/egress), reached through 127.0.0.1:3128 inside with the proxy variables set;
// a CA certificate given by the proxy is trusted by the commands. Direct connections still fail.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContainerBackend, limitsForSize } from "../src/index.js";
import {
  containersWithPrefix,
  ExecClient,
  ensureImage,
  MiB,
  mountsUnder,
  runPrefix,
  tempRoot,
} from "./helpers.js";

const prefix = runPrefix("net");
const root = tempRoot("net");
const limits = limitsForSize("small", { overrides: { diskBytes: 64 * MiB } });
let backend: ContainerBackend;
const clients: ExecClient[] = [];
const stubs: Server[] = [];

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** A stand-in for the egress proxy: an HTTP server on `dir/proxy.sock` that records each request. */
async function stubProxy(dir: string): Promise<Seen[]> {
  const seen: Seen[] = [];
  mkdirSync(dir, { recursive: true });
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "content-type": "text/plain" }).end(`stub proxy saw ${req.method} ${req.url}\n`);
  });
  const sock = join(dir, "proxy.sock");
  await new Promise<void>((r) => server.listen(sock, () => r()));
  chmodSync(sock, 0o666); // connectable by the sandbox's uid
  stubs.push(server);
  return seen;
}

beforeAll(async () => {
  await ensureImage();
  backend = await ContainerBackend.open({ rootDir: root, namePrefix: prefix });
}, 300_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const r of (await backend?.list()) ?? []) await (await backend.adopt(r.id!))?.destroy();
  await backend?.close();
  for (const s of stubs) s.close();
  expect(containersWithPrefix(prefix)).toEqual([]);
  expect(mountsUnder(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("network proxy mode", () => {
  it("requests reach the proxy's unix socket with their headers; direct connections and DNS fail", async () => {
    const socketDir = join(root, "egress-a");
    const seen = await stubProxy(socketDir);
    const s = await backend.create({ id: "sess-proxy", limits, network: { mode: "proxy", socketDir } });
    expect(s.network).toMatchObject({ mode: "proxy", socketDir, socketPath: join(socketDir, "proxy.sock") });
    const c = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c);
    const r = await c.run("curl -sS -m 10 -H 'X-Sandbox-Test: yes' http://allowed.test/some/path?q=1");
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe("stub proxy saw GET http://allowed.test/some/path?q=1\n");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "GET", url: "http://allowed.test/some/path?q=1" });
    expect(seen[0]!.headers.host).toBe("allowed.test");
    expect(seen[0]!.headers["x-sandbox-test"]).toBe("yes");
    const env = await c.run(
      "echo $HTTP_PROXY $HTTPS_PROXY $http_proxy $ALL_PROXY; echo no_proxy=[$NO_PROXY]",
    );
    expect(env.stdout).toBe(
      "http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128\nno_proxy=[]\n",
    );
    const direct = await c.run(
      "curl -sS -m 5 --noproxy '*' http://allowed.test/ && echo direct-ok || echo direct-failed; getent hosts allowed.test || echo dns-failed; ls /sys/class/net",
    );
    expect(direct.stdout).toContain("direct-failed");
    expect(direct.stdout).toContain("dns-failed");
    expect(direct.stdout.trim().split("\n").at(-1)).toBe("lo");
    expect(seen).toHaveLength(1);
    // The socket directory is read-only inside: the agent cannot replace the proxy's socket.
    const ro = await c.run("rm -f /run/egress/proxy.sock 2>&1; ls /run/egress");
    expect(ro.stdout).toMatch(/Read-only file system|Permission denied/);
  });

  it("trusts the proxy's CA certificate (no key) through the usual variables", async () => {
    const dir = join(root, "ca");
    mkdirSync(dir, { recursive: true });
    const caCertPath = join(dir, "ca.crt");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=sandbox-test-ca",
        "-keyout",
        join(dir, "ca.key"),
        "-out",
        caCertPath,
      ],
      { stdio: "ignore" },
    );
    const s = await backend.create({ id: "sess-ca", limits, network: { mode: "proxy", caCertPath } });
    expect(s.network.mode === "proxy" && s.network.socketPath.startsWith(root)).toBe(true);
    const c = await ExecClient.open(s.executor.url, s.executor.token);
    clients.push(c);
    const r = await c.run(
      "for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT; do printenv $v; done; grep -c 'BEGIN CERTIFICATE' $SSL_CERT_FILE; openssl x509 -noout -subject -in $NODE_EXTRA_CA_CERTS 2>/dev/null || grep -c BEGIN $NODE_EXTRA_CA_CERTS; ls /run/codex-trust",
    );
    const lines = r.stdout.trim().split("\n");
    expect(lines.slice(0, 6)).toEqual([
      "/run/codex-trust/ca-bundle.crt",
      "/run/codex-trust/ca.crt",
      "/run/codex-trust/ca-bundle.crt",
      "/run/codex-trust/ca-bundle.crt",
      "/run/codex-trust/ca-bundle.crt",
      "/run/codex-trust/ca-bundle.crt",
    ]);
    // The bundle holds the system's CAs and the proxy's.
    expect(Number(lines[6])).toBeGreaterThan(1);
    const bundle = readFileSync(join(s.workspace.hostPath, "..", "trust", "ca-bundle.crt"), "utf8");
    expect(bundle).toContain(readFileSync(caCertPath, "utf8").trim());
    expect(r.stdout).not.toContain("ca.key");
    // A key is refused.
    await expect(
      backend.create({ id: "sess-key", limits, network: { mode: "proxy", caCertPath: join(dir, "ca.key") } }),
    ).rejects.toThrow(/no key|PEM certificate/);
  });
});
