// What /health says about the model, from the engines' notifications (shaped as the pinned engine sends them when
// its model's port is closed) and from the probe.
import { describe, expect, it } from "vitest";
import {
  connectionFailure,
  ENGINE_FAILURE_TTL_MS,
  ModelHealth,
  PROBE_EVERY_MS,
} from "../../../src/platform/engine/model-health.js";

/** The engine's notification while it retries a model it cannot connect to (codex 0.169.0, a closed port). */
const reconnecting = {
  error: {
    message: "Reconnecting... waiting for network",
    codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: null } },
    additionalDetails: "Connection failed: error sending request for url (http://10.1.2.3:8080/v1/responses)",
    misalignment: null,
  },
  willRetry: true,
  threadId: "t",
  turnId: "u",
};

function health(probe: string | null = null) {
  let now = 1_000_000;
  const probes: string[] = [];
  const h = new ModelHealth({
    url: "http://10.1.2.3:8080/v1",
    now: () => now,
    probe: async (url) => {
      probes.push(url);
      return probe;
    },
  });
  const advance = (ms: number) => {
    now += ms;
  };
  return { h, probes, advance };
}

describe("connectionFailure", () => {
  it("knows a failure to connect, without the URL", () => {
    expect(connectionFailure(reconnecting.error)).toBe(
      "Connection failed: error sending request for url (<url>)",
    );
    expect(connectionFailure({ message: "x", codexErrorInfo: "httpConnectionFailed" })).toBe("x");
  });

  it("is not fooled by the model's own answers", () => {
    // A disconnection after an HTTP status, a rate limit, a bad request: the model (or a gateway) answered.
    expect(
      connectionFailure({
        message: "m",
        codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: 502 } },
      }),
    ).toBeNull();
    expect(connectionFailure({ message: "m", codexErrorInfo: "usageLimitExceeded" })).toBeNull();
    expect(connectionFailure({ message: "m", codexErrorInfo: { badRequest: null } })).toBeNull();
    expect(connectionFailure(null)).toBeNull();
  });
});

describe("ModelHealth", () => {
  it("probes at once, then at most every PROBE_EVERY_MS; a probe that fails marks the model unreachable", async () => {
    const { h, probes, advance } = health("ECONNREFUSED");
    expect(h.status()).toEqual({ reachable: null, reason: null, since: null });
    await h.probeNow();
    expect(h.status()).toEqual({
      reachable: false,
      reason: "the model cannot be connected to (ECONNREFUSED)",
      since: 1000,
    });
    h.status();
    expect(probes).toHaveLength(1);
    advance(PROBE_EVERY_MS);
    h.status();
    await h.probeNow();
    expect(probes.length).toBeGreaterThanOrEqual(2);
    expect(h.status().since).toBe(1000); // still the first failure's time
  });

  it("an engine's connection failure counts until the model answers, or until it is not repeated for a while", async () => {
    const { h, advance } = health(null);
    await h.probeNow();
    expect(h.status()).toMatchObject({ reachable: true });
    h.observe("error", reconnecting);
    expect(h.status()).toMatchObject({ reachable: false, since: 1000 });
    expect(h.status().reason).toMatch(/^the engine cannot connect to the model \(Connection failed/);
    // The probe reaching the URL does not clear what the engine saw (it may use another one).
    advance(PROBE_EVERY_MS);
    await h.probeNow();
    expect(h.status().reachable).toBe(false);
    // The model answered (the engine reports usage after every response).
    h.observe("thread/tokenUsage/updated", {});
    expect(h.status()).toMatchObject({ reachable: true });
    // A failed turn that could not connect counts too; unrepeated for long, it is forgotten.
    h.observe("turn/completed", { turn: { status: "failed", error: reconnecting.error } });
    expect(h.status().reachable).toBe(false);
    advance(ENGINE_FAILURE_TTL_MS + 1);
    expect(h.status().reachable).toBe(true);
    // Other notifications change nothing.
    h.observe("item/agentMessage/delta", { delta: "x" });
    expect(h.status().reachable).toBe(true);
  });

  it("without a URL (no model key) there is nothing to probe", async () => {
    const h = new ModelHealth({ url: null, probe: () => Promise.reject(new Error("never")) });
    await h.probeNow();
    expect(h.status()).toEqual({ reachable: null, reason: null, since: null });
  });
});
