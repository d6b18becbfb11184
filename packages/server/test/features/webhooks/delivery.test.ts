// The parts of webhooks that need no service: the SSRF guard (addresses, URLs, resolution checked on the address
// connected to), the sender (no redirects, a time limit), Standard Webhooks signatures as the official SDK verifies
// them, secrets sealed at rest, and the retry schedule.
import { existsSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { InvalidWebhookSignatureError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventBody } from "../../../src/domain/webhooks/events.js";
import { checkWebhookUrl, postWebhook } from "../../../src/domain/webhooks/sender.js";
import { newSigningSecret, secretHint, signedHeaders } from "../../../src/domain/webhooks/signing.js";
import { retryDelay } from "../../../src/features/webhooks/deliverer.js";
import {
  LazySecretBox,
  loadSecretKey,
  parseSecretKey,
  SecretBox,
  SecretKeyError,
} from "../../../src/kernel/secrets.js";
import { OutboundGuard, type Resolve, TargetRefused } from "../../../src/platform/net/outbound-guard.js";
import { cleanup } from "../../support/fixture.js";
import { WebhookReceiver } from "../../support/webhook-receiver.js";

const strictGuard = new OutboundGuard({ allowPrivate: false });
const openGuard = new OutboundGuard({ allowPrivate: true });
const strict = { guard: strictGuard, allowHttp: false };
const open = { guard: openGuard, allowHttp: true };

// (Which addresses are refused, in every form, is outbound-guard.test.ts's: here, what webhooks add to it.)
describe("the SSRF guard, for webhooks", () => {
  it("checks URLs as written: https only unless allowed, no credentials, no literal private address or localhost", () => {
    expect(checkWebhookUrl("https://hooks.example.com/x?y=1", strict).hostname).toBe("hooks.example.com");
    for (const [url, why] of [
      ["http://hooks.example.com/x", /must be https/],
      ["ftp://hooks.example.com/x", /must be https/],
      ["not a url", /not a valid URL/],
      ["https://u:p@hooks.example.com/", /credentials/],
      ["https://127.0.0.1/", /loopback/],
      ["https://[::1]:8443/", /loopback/],
      ["https://[::7f00:1]:8443/", /127\.0\.0\.1 \(IPv4-compatible\), a loopback/],
      ["https://[::ffff:0:7f00:1]:8443/", /127\.0\.0\.1 \(IPv4-translated\), a loopback/],
      ["https://localhost/", /loopback name/],
      ["https://api.localhost/", /loopback name/],
    ] as const) {
      expect(() => checkWebhookUrl(url, strict), url).toThrow(why);
    }
    expect(checkWebhookUrl("http://127.0.0.1:9/x", open).port).toBe("9");
    expect(() => checkWebhookUrl("http://127.0.0.1:9/x", { guard: openGuard, allowHttp: false })).toThrow(
      TargetRefused,
    );
  });

  it("a delivery to an address literal in an IPv6 form is refused before anything is sent", async () => {
    const receiver = await WebhookReceiver.start();
    try {
      for (const host of ["[::7f00:1]", "[::ffff:0:7f00:1]", "[::ffff:127.0.0.1]"]) {
        const r = await postWebhook(
          `http://${host}:${receiver.port}/x`,
          "{}",
          {},
          {
            guard: strictGuard,
            allowHttp: true,
          },
        );
        expect(r.status_code, host).toBeNull();
        expect(r.error, host).toMatch(/carries 127\.0\.0\.1 .*--allow-private-targets/);
      }
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  describe("names are resolved and the connection goes to the checked address", () => {
    let receiver: WebhookReceiver;
    beforeAll(async () => {
      receiver = await WebhookReceiver.start();
    });
    afterAll(async () => {
      await receiver.close();
    });
    const fake = (...answers: string[][]): Resolve & { calls: number } => {
      const r = ((_host: string, cb: Parameters<Resolve>[1]) => {
        const list = answers[Math.min(r.calls, answers.length - 1)]!;
        r.calls++;
        cb(
          null,
          list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
        );
      }) as Resolve & { calls: number };
      r.calls = 0;
      return r;
    };

    it("a name resolving to a refused address (or to a mix) is refused before anything is sent", async () => {
      for (const answer of [["127.0.0.1"], ["93.184.216.34", "10.0.0.7"], ["::1"], ["::7f00:1"]]) {
        const r = await postWebhook(
          `http://hooks.example.test:${receiver.port}/x`,
          "{}",
          {},
          { guard: new OutboundGuard({ allowPrivate: false, resolve: fake(answer) }), allowHttp: true },
        );
        expect(r.status_code).toBeNull();
        expect(r.error).toMatch(
          /hooks\.example\.test resolves to .*(loopback|private).*--allow-private-targets/,
        );
      }
      expect(receiver.received).toEqual([]);
    });

    it("DNS rebinding: a name public when the endpoint was registered and loopback at delivery is refused then", async () => {
      const resolve = fake(["93.184.216.34"], ["127.0.0.1"]);
      const guard = new OutboundGuard({ allowPrivate: false, resolve });
      const url = `http://hooks.example.test:${receiver.port}/rebound`;
      await guard.checkResolved(checkWebhookUrl(url, { guard, allowHttp: true })); // registration: accepted
      const r = await postWebhook(url, "{}", {}, { guard, allowHttp: true });
      expect(r.status_code).toBeNull();
      expect(r.error).toMatch(/hooks\.example\.test resolves to 127\.0\.0\.1, a loopback address/);
      // The delivery resolved the name itself, once, and connected to nothing it had not checked.
      expect(resolve.calls).toBe(2);
      expect(receiver.at("/rebound")).toEqual([]);
    });

    it("every attempt resolves again (a name that rebinds to a private address is refused at its next attempt)", async () => {
      const resolve = fake(["127.0.0.1"], ["10.0.0.9"]);
      const first = await postWebhook(
        `http://hooks.example.test:${receiver.port}/rebind`,
        "{}",
        {},
        { guard: new OutboundGuard({ allowPrivate: true, resolve }), allowHttp: true },
      );
      // The connection went to the resolved address (our receiver), with the name as Host.
      expect(first).toMatchObject({ status_code: 200, error: null });
      expect(receiver.at("/rebind")[0]!.headers.host).toBe(`hooks.example.test:${receiver.port}`);
      const second = await postWebhook(
        `http://hooks.example.test:${receiver.port}/rebind`,
        "{}",
        {},
        { guard: new OutboundGuard({ allowPrivate: false, resolve }), allowHttp: true },
      );
      expect(resolve.calls).toBe(2);
      expect(second.status_code).toBeNull();
      expect(second.error).toMatch(/resolves to 10\.0\.0\.9, a private address/);
      expect(receiver.at("/rebind")).toHaveLength(1);
    });

    it("a redirect is a failed attempt and is not followed", async () => {
      receiver.answerNext("/moved", 302);
      receiver.answerHeaders = { location: receiver.urlOf("/elsewhere") };
      try {
        const r = await postWebhook(receiver.urlOf("/moved"), "{}", {}, open);
        expect(r).toMatchObject({ status_code: 302, error: "answered 302: redirects are not followed" });
        expect(receiver.at("/elsewhere")).toEqual([]);
      } finally {
        receiver.answerHeaders = {};
      }
    });

    it("a receiver that does not answer in time fails the attempt", async () => {
      receiver.hang = true;
      try {
        const r = await postWebhook(receiver.urlOf("/slow"), "{}", {}, { ...open, timeoutMs: 200 });
        expect(r.status_code).toBeNull();
        expect(r.error).toBe("no answer within 0.2 s");
      } finally {
        receiver.hang = false;
      }
    });
  });
});

describe("signatures", () => {
  const client = new OpenAI({ apiKey: "x" });
  const body = eventBody({
    event_id: "evt_1",
    event_type: "agent.session.idle",
    event_created_at: 1_800_000_000.7,
    data: { id: "sess_1", environment_type: "none" },
  });

  it("the event body is the official envelope", () => {
    expect(JSON.parse(body)).toEqual({
      id: "evt_1",
      object: "event",
      created_at: 1_800_000_000,
      type: "agent.session.idle",
      data: { id: "sess_1", environment_type: "none" },
    });
  });

  it("verify with the official SDK, with one secret or two (a rotation), and only with those", async () => {
    const a = newSigningSecret();
    const b = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(secretHint(a)).toBe(`whsec_…${a.slice(-4)}`);
    const now = Math.floor(Date.now() / 1000);
    const one = signedHeaders([a], "evt_1", now, body);
    expect(await client.webhooks.unwrap(body, one, a)).toMatchObject({
      id: "evt_1",
      type: "agent.session.idle",
    });
    await expect(client.webhooks.unwrap(body, one, b)).rejects.toBeInstanceOf(InvalidWebhookSignatureError);
    const two = signedHeaders([b, a], "evt_1", now, body);
    expect(two["webhook-signature"]!.split(" ")).toHaveLength(2);
    await client.webhooks.unwrap(body, two, a);
    await client.webhooks.unwrap(body, two, b);
    // The signature covers the id, the timestamp and the body.
    await expect(client.webhooks.unwrap(`${body} `, one, a)).rejects.toBeInstanceOf(
      InvalidWebhookSignatureError,
    );
    await expect(client.webhooks.unwrap(body, { ...one, "webhook-id": "evt_2" }, a)).rejects.toBeInstanceOf(
      InvalidWebhookSignatureError,
    );
    const stale = signedHeaders([a], "evt_1", now - 600, body);
    await expect(client.webhooks.unwrap(body, stale, a)).rejects.toBeInstanceOf(InvalidWebhookSignatureError);
  });
});

describe("secrets at rest", () => {
  const dir = mkdtempSync(join(tmpdir(), "cas-secrets-"));
  afterAll(() => cleanup(dir));

  it("seal and open with the same key and context only", () => {
    const box = new SecretBox(Buffer.alloc(32, 1));
    const sealed = box.seal("whsec_top", "webhook_endpoint:whe_1");
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\./);
    expect(sealed).not.toContain("whsec_top");
    expect(box.seal("whsec_top", "webhook_endpoint:whe_1")).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed, "webhook_endpoint:whe_1")).toBe("whsec_top");
    expect(() => box.open(sealed, "webhook_endpoint:whe_2")).toThrow(SecretKeyError);
    const parts = sealed.split(".");
    parts[4] = Buffer.from("tampered").toString("base64url");
    expect(() => box.open(parts.join("."), "webhook_endpoint:whe_1")).toThrow(/integrity/);
    expect(() => new SecretBox(Buffer.alloc(32, 2)).open(sealed, "webhook_endpoint:whe_1")).toThrow(
      /another key .*AGENT_SECRET_KEY/,
    );
  });

  it("a key from the environment (base64 or hex), a key file, or one generated into the data dir (0600)", () => {
    const key = Buffer.alloc(32, 9);
    expect(loadSecretKey({ key: key.toString("base64"), dataDir: dir }).key.equals(key)).toBe(true);
    expect(loadSecretKey({ key: key.toString("hex"), dataDir: dir })).toMatchObject({
      origin: "env",
      path: null,
    });
    expect(() => parseSecretKey("too short", "AGENT_SECRET_KEY")).toThrow(/32-byte key/);
    const file = join(dir, "given.key");
    writeFileSync(file, `${key.toString("base64")}\n`, { mode: 0o644 });
    const fromFile = loadSecretKey({ keyFile: file, dataDir: dir });
    expect(fromFile.key.equals(key)).toBe(true);
    expect(fromFile.warning).toMatch(/readable by others/);

    const data = join(dir, "data");
    mkdirSync(data);
    const generated = loadSecretKey({ dataDir: data });
    expect(generated.origin).toBe("generated");
    expect(statSync(join(data, "secret.key")).mode & 0o777).toBe(0o600);
    const again = loadSecretKey({ dataDir: data });
    expect(again.origin).toBe("data-dir");
    expect(again.key.equals(generated.key)).toBe(true);
    expect(again.warning).toBeNull();
  });

  it("a lazy box creates no key file until it is used", () => {
    const data = join(dir, "lazy");
    mkdirSync(data);
    const loaded: string[] = [];
    const box = new LazySecretBox(
      () => loadSecretKey({ dataDir: data }),
      (k) => loaded.push(k.origin),
    );
    expect(existsSync(join(data, "secret.key"))).toBe(false);
    expect(box.open(box.seal("s", "c"), "c")).toBe("s");
    expect(loaded).toEqual(["generated"]);
    expect(existsSync(join(data, "secret.key"))).toBe(true);
  });
});

describe("the retry schedule", () => {
  it("grows fourfold from 30 s up to 6 h, with ±25 % jitter", () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => retryDelay(n, mid))).toEqual([
      30, 120, 480, 1920, 7680, 21600, 21600, 21600,
    ]);
    // Whole seconds, inside the bounds even at their ends (22.5 s is not cut to 22).
    expect(retryDelay(1, () => 0)).toBe(23);
    expect(retryDelay(1, () => 0.999999)).toBe(37);
    for (const r of [0, 0.1, 0.37, 0.5, 0.77, 0.999999])
      expect(Number.isInteger(retryDelay(3, () => r))).toBe(true);
    expect(retryDelay(30, () => 0.999999)).toBeLessThanOrEqual(6 * 3600 * 1.25);
  });
});
