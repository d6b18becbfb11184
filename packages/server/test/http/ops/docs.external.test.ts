// The docs page (`GET /docs`) in Debian's Chromium: Swagger UI from this server's own files under a strict CSP, both
// dialects' documents, and a working "Try it out" from the page. (The OpenAPI documents themselves:
// features/observability/observability.engine.test.ts.)
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerFixture, startServer } from "../../support/fixture.js";

describe("on a running service", () => {
  let f: ServerFixture;

  beforeAll(async () => {
    f = await startServer();
  });
  afterAll(async () => {
    await f?.close();
  });

  it("/docs: Swagger UI from this server's files under a strict CSP, both documents, working 'Try it out'", async () => {
    const page = await fetch(`${f.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https:|http:/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<\s]|https?:\/\//);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(5);
    for (const asset of assets) {
      const res = await fetch(new URL(asset, `${f.url}/docs`));
      expect(res.status, asset).toBe(200);
      expect(res.headers.get("content-security-policy"), asset).toBe(csp);
      expect((await res.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }

    const CHROMIUM = "/usr/bin/chromium";
    expect(existsSync(CHROMIUM), "Debian's Chromium (apt-get install -y chromium)").toBe(true);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    try {
      const tab = await browser.newPage();
      tab.setDefaultTimeout(20_000);
      const problems: string[] = [];
      const outside: string[] = [];
      tab.on("console", (m) => {
        if (m.type() === "error" || /Content Security Policy/.test(m.text())) problems.push(m.text());
      });
      tab.on("pageerror", (e) => problems.push(e.message));
      tab.on("request", (r) => {
        if (!r.url().startsWith(f.url) && !r.url().startsWith("data:")) outside.push(r.url());
      });
      await tab.goto(`${f.url}/docs`);
      await tab.waitForSelector("#operations-Agents-listAgents");
      expect(await tab.locator(".opblock").count()).toBeGreaterThan(20);
      expect(await tab.locator(".info .title").innerText()).toContain("official dialect");

      // Try it out: the official operation sends its OpenAI-Beta header, from this page, under the CSP.
      await tab.click("#operations-Agents-listAgents .opblock-summary-control");
      await tab.click("#operations-Agents-listAgents .try-out__btn");
      await tab.click("#operations-Agents-listAgents .execute");
      const status = tab.locator(
        "#operations-Agents-listAgents .live-responses-table tbody .response-col_status",
      );
      await expect.poll(() => status.first().innerText(), { timeout: 20_000 }).toBe("200");
      expect(await tab.locator("#operations-Agents-listAgents .live-responses-table").innerText()).toContain(
        '"object": "list"',
      );

      // The template document, from the top bar.
      await tab.selectOption(".topbar select", { label: "Template dialect" });
      await expect
        .poll(() => tab.locator(".info .title").innerText(), { timeout: 20_000 })
        .toContain("template dialect");
      await tab.waitForSelector("#operations-Events-sendSessionEvent");
      expect(problems).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
