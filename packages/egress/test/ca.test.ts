// The service's certificate authority: leaves that verify against it for the host they name, persistence through
// PEM, refusal of keys that do not match; and the ClientHello reader on a real TLS client's first bytes.
import "reflect-metadata";
import { generateKeyPairSync, webcrypto, X509Certificate } from "node:crypto";
import { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import * as x509 from "@peculiar/x509";
import { describe, expect, it } from "vitest";
import { parseClientHello } from "../src/client-hello.js";
import { CertificateAuthority } from "../src/index.js";

describe("CertificateAuthority", () => {
  it("issues leaf certificates that verify against the CA for exactly their host, and survives a PEM round trip", async () => {
    const ca = await CertificateAuthority.create({ commonName: "test CA" });
    const caCert = new X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    expect(ca.certPem).not.toMatch(/PRIVATE KEY/);

    const leaf = await ca.issue("api.example.test");
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.checkHost("api.example.test")).toBe("api.example.test");
    expect(cert.checkHost("other.example.test")).toBeUndefined();
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]);
    expect(Date.parse(cert.validTo) - Date.now()).toBeLessThanOrEqual(7 * 86_400_000);
    const ipLeaf = new X509Certificate((await ca.issue("203.0.113.7")).certPem);
    expect(ipLeaf.checkIP("203.0.113.7")).toBe("203.0.113.7");

    const { certPem, keyPem } = ca.toPem();
    const again = await CertificateAuthority.fromPem(certPem, keyPem);
    const leaf2 = new X509Certificate((await again.issue("b.example.test")).certPem);
    expect(leaf2.verify(caCert.publicKey)).toBe(true);
  });

  it("loads an RSA CA too, and refuses a key that does not match or a certificate that is not a CA", async () => {
    const a = await CertificateAuthority.create();
    const b = await CertificateAuthority.create();
    await expect(CertificateAuthority.fromPem(a.certPem, b.toPem().keyPem)).rejects.toThrow(/does not match/);
    await expect(CertificateAuthority.fromPem(a.certPem, "garbage")).rejects.toThrow(/not a PEM private key/);
    const leaf = await a.issue("leaf.test");
    await expect(CertificateAuthority.fromPem(leaf.certPem, leaf.keyPem)).rejects.toThrow(/not a CA/);
    // An RSA key cannot match an EC certificate either.
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
      type: "pkcs8",
      format: "pem",
    });
    await expect(CertificateAuthority.fromPem(a.certPem, rsa.toString())).rejects.toThrow(/does not match/);

    // An operator's RSA CA (made here with the same library).
    const alg = {
      name: "RSASSA-PKCS1-v1_5",
      hash: "SHA-256",
      publicExponent: new Uint8Array([1, 0, 1]),
      modulusLength: 2048,
    };
    const keys = (await webcrypto.subtle.generateKey(alg, true, [
      "sign",
      "verify",
    ])) as webcrypto.CryptoKeyPair;
    const rsaCa = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "01",
      name: "CN=rsa CA",
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
      keys,
      signingAlgorithm: alg,
      extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
    });
    const keyPem = x509.PemConverter.encode(
      await webcrypto.subtle.exportKey("pkcs8", keys.privateKey),
      "PRIVATE KEY",
    );
    const loaded = await CertificateAuthority.fromPem(rsaCa.toString("pem"), keyPem);
    const rsaLeaf = new X509Certificate((await loaded.issue("rsa.test")).certPem);
    expect(rsaLeaf.verify(new X509Certificate(rsaCa.toString("pem")).publicKey)).toBe(true);
    expect(rsaLeaf.checkHost("rsa.test")).toBe("rsa.test");
  });
});

/** The first bytes a real TLS client sends for a server name. */
function clientHelloFor(servername: string | undefined): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sink = new Duplex({
      read() {},
      write(chunk, _e, cb) {
        chunks.push(chunk);
        resolve(Buffer.concat(chunks));
        cb();
      },
    });
    const t = tlsConnect({ socket: sink, servername, host: undefined });
    t.on("error", () => {});
    setImmediate(() => t.destroy());
  });
}

describe("parseClientHello", () => {
  it("reads the server name from a real ClientHello, whole or byte by byte", async () => {
    const hello = await clientHelloFor("api.example.test");
    expect(parseClientHello(hello)).toEqual({ state: "complete", serverName: "api.example.test" });
    for (const cut of [1, 5, 40, hello.length - 1]) {
      expect(parseClientHello(hello.subarray(0, cut)).state).toBe("incomplete");
    }
    // The handshake split over two TLS records.
    const body = hello.subarray(5);
    const split = Buffer.concat([
      Buffer.from([0x16, 0x03, 0x01, 0, 20]),
      body.subarray(0, 20),
      Buffer.from([0x16, 0x03, 0x01, (body.length - 20) >> 8, (body.length - 20) & 255]),
      body.subarray(20),
    ]);
    expect(parseClientHello(split)).toEqual({ state: "complete", serverName: "api.example.test" });
    expect(parseClientHello(await clientHelloFor(undefined))).toEqual({
      state: "complete",
      serverName: null,
    });
  });

  it("says invalid for what is not a ClientHello", () => {
    expect(parseClientHello(Buffer.from("GET / HTTP/1.1\r\n\r\n")).state).toBe("invalid");
    expect(parseClientHello(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0, 0, 0])).state).toBe(
      "invalid",
    );
  });
});
