// The address classifier (`@codex-agent-api/egress/addresses`): the same verdicts, in the same words, as the
// server's outbound guard (its tables, copied), plus the structured form, normalisation and CIDR lists.
import { describe, expect, it } from "vitest";
import { nonPublic as guardNonPublic } from "../../server/src/platform/net/outbound-guard.js";
import {
  classifyAddress,
  inCidrs,
  isLoopbackName,
  nonPublic,
  normalizeAddress,
  parseCidrs,
} from "../src/addresses.js";

/** Every form of a non-public address the classifier must refuse (the issue's, and more). */
const REFUSED_ADDRESSES: Array<[string, RegExp]> = [
  ["127.0.0.1", /loopback/],
  ["127.1.2.3", /loopback/],
  ["0.0.0.0", /unspecified/],
  ["0.1.2.3", /unspecified/],
  ["10.0.0.1", /private/],
  ["172.16.0.1", /private/],
  ["172.31.255.255", /private/],
  ["192.168.0.1", /private/],
  ["100.64.0.1", /shared \(carrier-grade NAT\)/],
  ["169.254.169.254", /link-local/],
  ["192.0.0.8", /reserved/],
  ["192.0.2.1", /reserved/],
  ["198.18.0.1", /reserved/],
  ["203.0.113.9", /reserved/],
  ["240.0.0.1", /reserved/],
  ["224.0.0.1", /multicast/],
  ["255.255.255.255", /broadcast/],
  ["::", /unspecified/],
  ["::1", /loopback/],
  ["fc00::1", /unique local/],
  ["fd12:3456::1", /unique local/],
  ["fe80::1", /link-local/],
  ["fec0::1", /site-local/],
  ["ff02::1", /multicast/],
  ["2001:db8::1", /reserved/],
  ["100::1", /discard/],
  ["4000::1", /outside the global unicast space/],
  // IPv4 inside IPv6: judged by the IPv4 address.
  ["::ffff:127.0.0.1", /carries 127\.0\.0\.1 \(IPv4-mapped\), a loopback/],
  ["::ffff:7f00:1", /carries 127\.0\.0\.1 \(IPv4-mapped\)/],
  ["::ffff:a9fe:a9fe", /carries 169\.254\.169\.254 \(IPv4-mapped\), a link-local/],
  ["::7f00:1", /carries 127\.0\.0\.1 \(IPv4-compatible\), a loopback/],
  ["::a00:1", /carries 10\.0\.0\.1 \(IPv4-compatible\), a private/],
  ["::ffff:0:7f00:1", /carries 127\.0\.0\.1 \(IPv4-translated\), a loopback/],
  ["64:ff9b::10.0.0.1", /carries 10\.0\.0\.1 \(NAT64\), a private/],
  ["64:ff9b::7f00:1", /carries 127\.0\.0\.1 \(NAT64\)/],
  ["64:ff9b:1::808:808", /local-use NAT64/],
  ["2002:c0a8:0101::1", /carries 192\.168\.1\.1 \(6to4\), a private/],
  ["2002:7f00:1::1", /carries 127\.0\.0\.1 \(6to4\)/],
  // Teredo: the server (bits 32-63) and the client (the last 32 bits, inverted) are both judged.
  ["2001:0:7f00:1::1", /carries 127\.0\.0\.1 \(Teredo\)/],
  ["2001:0:808:808::f5ff:fffe", /carries 10\.0\.0\.1 \(Teredo\), a private/],
];

const PUBLIC_ADDRESSES = [
  "93.184.216.34",
  "8.8.8.8",
  "172.32.0.1",
  "100.128.0.1",
  "2606:4700::1111",
  "::ffff:8.8.8.8",
  "::ffff:0:808:808",
  "64:ff9b::8.8.8.8",
  "2002:808:808::1",
  "2001:0:808:808::f7f7:f7f7",
];

describe("addresses", () => {
  it("refuses every non-public address, IPv4 inside IPv6 included, as the outbound guard does", () => {
    for (const [ip, why] of REFUSED_ADDRESSES) {
      expect(nonPublic(ip), ip).toMatch(why);
      expect(nonPublic(ip), ip).toBe(guardNonPublic(ip));
      expect(classifyAddress(ip).public, ip).toBe(false);
    }
  });

  it("allows public addresses, also when an IPv6 form carries a public IPv4 address", () => {
    for (const ip of PUBLIC_ADDRESSES) {
      expect(nonPublic(ip), ip).toBeNull();
      expect(classifyAddress(ip), ip).toEqual({ public: true });
    }
    expect(nonPublic("not-an-address")).toMatch(/not an IP address/);
    expect(() => classifyAddress("example.com")).toThrow(TypeError);
  });

  it("says which range, and which IPv4 address an IPv6 form carries", () => {
    expect(classifyAddress("169.254.169.254")).toEqual({ public: false, range: "linkLocal" });
    expect(classifyAddress("::ffff:a9fe:a9fe")).toEqual({
      public: false,
      range: "linkLocal",
      carried: { form: "IPv4-mapped", ipv4: "169.254.169.254" },
    });
    expect(classifyAddress("4000::1")).toEqual({ public: false, range: "notGlobalUnicast" });
  });

  it("normalises addresses (IPv4-mapped IPv6 as the IPv4 address it reaches) and matches CIDR lists", () => {
    expect(normalizeAddress("::ffff:7f00:2")).toBe("127.0.0.2");
    expect(normalizeAddress("0:0:0:0:0:0:0:1")).toBe("::1");
    expect(normalizeAddress("64:ff9b::7f00:1")).toBe("64:ff9b::7f00:1");
    const cidrs = parseCidrs(["127.0.0.2", "10.1.0.0/16", "fd00::/8"]);
    expect(inCidrs("127.0.0.2", cidrs)).toBe(true);
    expect(inCidrs("::ffff:127.0.0.2", cidrs)).toBe(true);
    expect(inCidrs("127.0.0.3", cidrs)).toBe(false);
    expect(inCidrs("10.1.200.3", cidrs)).toBe(true);
    expect(inCidrs("fd12::1", cidrs)).toBe(true);
    // A NAT64 form does not reach the IPv4 address itself: not covered by an IPv4 range.
    expect(inCidrs("64:ff9b::7f00:2", cidrs)).toBe(false);
    expect(() => parseCidrs(["10.0.0.0/33"])).toThrow(TypeError);
    expect(() => parseCidrs(["nope"])).toThrow(/not an address or a CIDR/);
  });

  it("localhost names", () => {
    for (const n of ["localhost", "LOCALHOST.", "api.localhost"]) expect(isLoopbackName(n), n).toBe(true);
    for (const n of ["localhost.example.com", "mylocalhost"]) expect(isLoopbackName(n), n).toBe(false);
  });
});
