/**
 * The service's certificate authority for intercepting HTTPS to credentialed hosts: created once and persisted by
 * the caller (its key never leaves the service; only its certificate goes into sandboxes), it issues short-lived
 * leaf certificates per host. Certificates are made with @peculiar/x509 on WebCrypto.
 */
import "reflect-metadata";
import { createPrivateKey, randomBytes, webcrypto, X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const EC_P256 = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** How long a leaf certificate is valid (and reissued when less than a day is left). */
export const LEAF_VALIDITY_MS = 7 * DAY;

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
  /** When it stops being valid (ms since the epoch). */
  notAfter: number;
}

type SigningAlgorithm = webcrypto.EcdsaParams | webcrypto.RsaHashedImportParams;

const randomSerial = () => {
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f; // positive
  return b.toString("hex");
};

const exportPkcs8 = async (key: CryptoKey) =>
  x509.PemConverter.encode(await webcrypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY");

export class CertificateAuthority {
  /** The CA certificate (PEM): what sandboxes trust. */
  readonly certPem: string;
  private readonly cert: x509.X509Certificate;
  private readonly keyPem: string;
  private readonly signingKey: CryptoKey;
  private readonly algorithm: SigningAlgorithm;
  /** One key pair for every leaf (it never leaves the proxy); made on first use. */
  private leafKeys: Promise<{ keys: CryptoKeyPair; keyPem: string }> | null = null;

  private constructor(
    cert: x509.X509Certificate,
    keyPem: string,
    signingKey: CryptoKey,
    algorithm: SigningAlgorithm,
  ) {
    this.cert = cert;
    this.certPem = cert.toString("pem");
    this.keyPem = keyPem;
    this.signingKey = signingKey;
    this.algorithm = algorithm;
  }

  /** A new ECDSA P-256 CA. */
  static async create(
    opts: { commonName?: string; validityDays?: number } = {},
  ): Promise<CertificateAuthority> {
    const keys = (await webcrypto.subtle.generateKey(EC_P256, true, ["sign", "verify"])) as CryptoKeyPair;
    const now = Date.now();
    const cn = (opts.commonName ?? "codex-agent-api egress CA").replace(/[,+=<>#;"\\]/g, " ");
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: randomSerial(),
      name: [{ CN: [cn] }],
      notBefore: new Date(now - HOUR),
      notAfter: new Date(now + (opts.validityDays ?? 3650) * DAY),
      keys,
      signingAlgorithm: EC_P256,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return new CertificateAuthority(cert, await exportPkcs8(keys.privateKey), keys.privateKey, EC_P256);
  }

  /** A persisted CA: its certificate and its private key (PKCS#8 or the key's own PEM form). */
  static async fromPem(certPem: string, keyPem: string): Promise<CertificateAuthority> {
    const cert = new x509.X509Certificate(certPem);
    const node = new X509Certificate(certPem);
    if (!node.ca) throw new TypeError("the certificate is not a CA certificate (basicConstraints CA:true)");
    let key: ReturnType<typeof createPrivateKey>;
    try {
      key = createPrivateKey(keyPem);
    } catch {
      throw new TypeError("the CA key is not a PEM private key");
    }
    if (!node.checkPrivateKey(key)) throw new TypeError("the CA key does not match the CA certificate");
    const pkcs8 = key.export({ type: "pkcs8", format: "der" });
    let algorithm: SigningAlgorithm;
    let importAlg: webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams;
    if (key.asymmetricKeyType === "ec") {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      const namedCurve = curve === "prime256v1" ? "P-256" : curve === "secp384r1" ? "P-384" : null;
      if (!namedCurve) throw new TypeError(`the CA key's curve ${curve} is not supported (P-256 or P-384)`);
      importAlg = { name: "ECDSA", namedCurve };
      algorithm = {
        name: "ECDSA",
        hash: namedCurve === "P-256" ? "SHA-256" : "SHA-384",
      } as webcrypto.EcdsaParams;
    } else if (key.asymmetricKeyType === "rsa") {
      importAlg = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
      algorithm = importAlg;
    } else {
      throw new TypeError(`the CA key type ${key.asymmetricKeyType} is not supported (EC or RSA)`);
    }
    const signingKey = await webcrypto.subtle.importKey("pkcs8", pkcs8, importAlg, false, ["sign"]);
    return new CertificateAuthority(
      cert,
      key.export({ type: "pkcs8", format: "pem" }).toString(),
      signingKey,
      algorithm,
    );
  }

  /** The certificate and key, for the caller to persist (the key belongs in the service's data directory, 0600). */
  toPem(): { certPem: string; keyPem: string } {
    return { certPem: this.certPem, keyPem: this.keyPem };
  }

  /** A leaf certificate for a host name or an IP address, valid for 7 days (never beyond the CA's own validity). */
  async issue(host: string): Promise<IssuedCertificate> {
    this.leafKeys ??= (async () => {
      const keys = (await webcrypto.subtle.generateKey(EC_P256, true, ["sign", "verify"])) as CryptoKeyPair;
      return { keys, keyPem: await exportPkcs8(keys.privateKey) };
    })();
    const { keys, keyPem } = await this.leafKeys;
    const now = Date.now();
    const notAfter = Math.min(now + LEAF_VALIDITY_MS, this.cert.notAfter.getTime());
    const ip = isIP(host) !== 0;
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: [{ CN: [host] }],
      issuer: this.cert.subjectName,
      notBefore: new Date(now - HOUR),
      notAfter: new Date(notAfter),
      signingKey: this.signingKey,
      publicKey: keys.publicKey,
      signingAlgorithm: this.algorithm,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: ip ? "ip" : "dns", value: host }]),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert),
      ],
    });
    return { certPem: cert.toString("pem"), keyPem, notAfter };
  }
}
