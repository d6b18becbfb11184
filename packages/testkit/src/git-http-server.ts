/**
 * Smart HTTP for tests: a node:http server on 127.0.0.1 running `git http-backend` as a CGI per request, with Basic
 * auth for the repositories listed as private and for every push; each request is recorded (git-servers.ts has the
 * daemon and the fixtures).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { posix } from "node:path";
import { existingDir, gitEnv, listen, stop } from "./git-servers.js";

export interface GitHttpRequest {
  method: string;
  /** The request target as sent: path and query, e.g. `/a.git/info/refs?service=git-upload-pack`. */
  path: string;
  /** The `Authorization` header, or null. */
  authorization: string | null;
}

export interface GitHttpServerOptions {
  /** Directory holding the repositories (`<root>/a.git` is served at `/a.git`). */
  root: string;
  /** Basic-auth accounts: user → password. */
  users?: Record<string, string>;
  /** Repositories (first path component, e.g. `private.git`) that need credentials even to read. */
  private?: string[];
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>/<repo>`. */
  url(repo: string): string;
  port: number;
  /** Every request, in arrival order (also those refused with 401). */
  requests: GitHttpRequest[];
  /** Stops listening, drops open connections and ends running backends. */
  close(): Promise<void>;
}

/** `a.git`, `/a.git/`, `a` → `a`: http-backend resolves `/a/…` to `a.git` too, so both must be guarded alike. */
const repoKey = (name: string): string => name.replace(/^\/+|\/+$/g, "").replace(/(\/\.git|\.git)$/, "");

/**
 * Starts a node:http server on 127.0.0.1 serving git smart HTTP for the repositories under `root` through
 * `git http-backend` (CGI). Reads are anonymous except for `private` repositories; pushes (receive-pack) always
 * need Basic credentials from `users`. Refused requests get 401 with `WWW-Authenticate: Basic realm="git"`.
 */
export async function startGitHttpServer(opts: GitHttpServerOptions): Promise<GitHttpServer> {
  const root = await existingDir(opts.root, "startGitHttpServer");
  const users = opts.users ?? {};
  const privateRepos = new Set((opts.private ?? []).map(repoKey));
  const requests: GitHttpRequest[] = [];
  const backends = new Set<ChildProcess>();

  const server = createServer((req, res) => {
    const target = req.url ?? "/";
    requests.push({
      method: req.method ?? "GET",
      path: target,
      authorization: req.headers.authorization ?? null,
    });
    const q = target.indexOf("?");
    const query = q < 0 ? "" : target.slice(q + 1);
    let pathInfo: string;
    try {
      pathInfo = posix.normalize(decodeURIComponent(q < 0 ? target : target.slice(0, q)));
    } catch {
      return plain(req, res, 400, "malformed path\n");
    }
    if (!pathInfo.startsWith("/") || pathInfo.includes("\0")) return plain(req, res, 400, "malformed path\n");

    const repo = pathInfo.split("/")[1] ?? "";
    const push =
      new URLSearchParams(query).get("service") === "git-receive-pack" ||
      pathInfo.endsWith("/git-receive-pack");
    const user = basicUser(req.headers.authorization, users);
    if (user === null && (push || privateRepos.has(repoKey(repo)))) {
      return plain(req, res, 401, "authentication required\n", { "WWW-Authenticate": 'Basic realm="git"' });
    }
    runBackend(req, res, { root, pathInfo, query, user, backends });
  });

  const port = await listen(server);
  let closing: Promise<void> | undefined;
  return {
    port,
    requests,
    url: (repo) => `http://127.0.0.1:${port}/${repo.replace(/^\/+/, "")}`,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeAllConnections();
        await Promise.all([...backends].map((child) => stop(child)));
        await closed;
      })();
      return closing;
    },
  };
}

/** The user of a valid `Authorization: Basic` header, or null. */
function basicUser(header: string | undefined, users: Record<string, string>): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return null;
  const user = decoded.slice(0, colon);
  return Object.hasOwn(users, user) && users[user] === decoded.slice(colon + 1) ? user : null;
}

function plain(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: string,
  headers: OutgoingHttpHeaders = {},
): void {
  req.resume(); // drain an unread request body so the connection can be reused
  if (res.writableEnded) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", ...headers });
  res.end(body);
}

/** Request headers as CGI meta-variables (`HTTP_GIT_PROTOCOL`, `HTTP_CONTENT_ENCODING`…), credentials aside. */
function httpVars(req: IncomingMessage): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (
      value === undefined ||
      /^(authorization|proxy-authorization|content-type|content-length)$/.test(name)
    ) {
      continue;
    }
    vars[`HTTP_${name.toUpperCase().replace(/-/g, "_")}`] = Array.isArray(value) ? value.join(", ") : value;
  }
  return vars;
}

interface BackendRequest {
  root: string;
  pathInfo: string;
  query: string;
  user: string | null;
  backends: Set<ChildProcess>;
}

/** Runs `git http-backend` for one request: the body to its stdin, its CGI response back to `res`. */
function runBackend(req: IncomingMessage, res: ServerResponse, r: BackendRequest): void {
  const env = gitEnv({
    ...httpVars(req),
    GATEWAY_INTERFACE: "CGI/1.1",
    GIT_PROJECT_ROOT: r.root,
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: r.pathInfo,
    REQUEST_METHOD: req.method ?? "GET",
    QUERY_STRING: r.query,
    CONTENT_TYPE: req.headers["content-type"] ?? "",
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    ...(req.headers["content-length"] !== undefined ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
    // http-backend allows receive-pack by default only with REMOTE_USER; say so explicitly for authenticated users.
    ...(r.user !== null
      ? {
          REMOTE_USER: r.user,
          GIT_CONFIG_COUNT: "1",
          GIT_CONFIG_KEY_0: "http.receivepack",
          GIT_CONFIG_VALUE_0: "true",
        }
      : {}),
  });
  const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
  r.backends.add(child);
  child.once("exit", () => r.backends.delete(child));
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-16_384);
  });
  let failed = false;
  const fail = (what: string) => {
    if (failed) return;
    failed = true;
    const detail = stderr.trim() ? `: ${stderr.trim()}` : "";
    plain(req, res, 502, `git http-backend ${what}${detail}\n`);
  };
  child.once("error", (err) => {
    r.backends.delete(child);
    fail(`could not run: ${err.message}`);
  });
  // The backend may exit without reading the whole body (a refused service): ignore EPIPE on its stdin.
  child.stdin.on("error", () => {});
  req.pipe(child.stdin);
  // A client gone before the response ended: end the backend too.
  res.once("close", () => {
    if (!res.writableFinished) void stop(child, 1_000);
  });

  let head = Buffer.alloc(0);
  let headersDone = false;
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = headerEnd(head);
    if (!end) {
      if (head.length > 64 * 1024) {
        child.stdout.off("data", onData);
        void stop(child, 1_000);
        fail("sent over 64 KiB without ending its headers");
      }
      return;
    }
    headersDone = true;
    child.stdout.off("data", onData);
    child.stdout.pause();
    const parsed = parseCgiHead(head.subarray(0, end.at).toString("latin1"));
    try {
      res.writeHead(parsed.status, parsed.reason, parsed.headers);
    } catch (err) {
      void stop(child, 1_000);
      fail(`sent invalid headers (${(err as Error).message})`);
      return;
    }
    const rest = head.subarray(end.at + end.length);
    if (rest.length > 0) res.write(rest);
    child.stdout.pipe(res);
  };
  child.stdout.on("data", onData);
  child.stdout.once("end", () => {
    if (!headersDone) fail(head.length > 0 ? "ended inside its headers" : "exited without a response");
  });
}

/** Where the CGI header block ends (`\r\n\r\n` or `\n\n`, whichever comes first). */
function headerEnd(buf: Buffer): { at: number; length: number } | undefined {
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  if (crlf < 0 && lf < 0) return undefined;
  if (lf < 0 || (crlf >= 0 && crlf < lf)) return { at: crlf, length: 4 };
  return { at: lf, length: 2 };
}

/** CGI response headers: `Status: 403 Forbidden` → the status; the others copied (repeated ones as a list). */
function parseCgiHead(text: string): {
  status: number;
  reason: string | undefined;
  headers: OutgoingHttpHeaders;
} {
  let status = 200;
  let reason: string | undefined;
  const headers: Record<string, string | string[]> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") {
      const m = /^(\d{3})\s*(.*)$/.exec(value);
      if (m?.[1]) {
        status = Number(m[1]);
        reason = m[2] || undefined;
      }
      continue;
    }
    const previous = headers[name];
    headers[name] =
      previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
  }
  if (status === 200 && headers.Location !== undefined) status = 302;
  return { status, reason, headers };
}
