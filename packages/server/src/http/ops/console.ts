/**
 * The web console (packages/console, a static build) at /console: served by the service itself, so it works
 * offline and talks to the API from the same origin (no CORS, nothing from a CDN). Client-side routes fall back
 * to index.html. Without a build, /console says how to make one.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fastifyStatic from "@fastify/static";
import { notFound } from "../../kernel/errors.js";
import type { App } from "../app-types.js";

/**
 * The console package's build (`@codex-agent-api/console`'s dist: packages/console/dist in the workspace, the
 * installed package's otherwise), or null when that package is not installed.
 */
export const CONSOLE_DIR = consoleDir();

function consoleDir(): string | null {
  try {
    return join(
      dirname(createRequire(import.meta.url).resolve("@codex-agent-api/console/package.json")),
      "dist",
    );
  } catch {
    return null;
  }
}

/** The console page may run its own scripts and styles only, and talk to this origin only. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export function consoleRoutes(app: App, dir: string | null = CONSOLE_DIR): void {
  if (!dir || !existsSync(join(dir, "index.html"))) {
    app.get("/console", async () => {
      throw notFound("The console is not built: run `npm run build` (or `npm start`, which builds it)");
    });
    return;
  }
  app.register(async (scoped) => {
    scoped.addHook("onSend", async (_req, reply) => {
      reply.header("content-security-policy", CSP);
      reply.header("x-content-type-options", "nosniff");
      reply.header("referrer-policy", "no-referrer");
    });
    await scoped.register(fastifyStatic, {
      root: dir,
      prefix: "/console/",
      wildcard: false,
      index: "index.html",
    });
    scoped.get("/console", (_req, reply) => reply.redirect("/console/", 302));
    // Client-side routes: any other path under /console/ is the app.
    scoped.get("/console/*", (_req, reply) => reply.type("text/html; charset=utf-8").sendFile("index.html"));
  });
}
