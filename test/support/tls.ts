/**
 * A throwaway certificate authority and a `localhost` server certificate it signed,
 * for HTTPS servers in tests (photo hosts, webhook receivers). The CA file goes to
 * the system under test as NODE_EXTRA_CA_CERTS: outbound TLS trusts what Node trusts
 * (README "Configuration").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface Certificates {
  /** File with the CA certificate, for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  /** Server key and certificate for the name `localhost`. */
  key: string;
  cert: string;
  /** Removes the temporary directory. */
  remove(): void;
}

/** A self-signed certificate authority named `name`. */
function generateCa(name: string) {
  return generate([{ name: 'commonName', value: name }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
}

/** A CA and a server certificate for `localhost` signed by it. */
export async function createCertificates(): Promise<Certificates> {
  const ca = await generateCa('Partner Sync test CA');
  const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] },
    ],
  });
  const dir = mkdtempSync(join(tmpdir(), 'psync-ca-'));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.cert);
  return { caFile, key: leaf.private, cert: leaf.cert, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A certificate authority of the internal API's tests: its PEM, and certificates it signs. */
export interface InternalCa {
  caPem: string;
  /**
   * A certificate for `localhost` and 127.0.0.1, usable as server and as client
   * certificate, or with `usages` only as one of them (the chart issues each component
   * only the extended key usages it needs).
   */
  issue(commonName?: string, usages?: { serverAuth: boolean; clientAuth: boolean }): Promise<{ cert: string; key: string }>;
}

/** A fresh CA for internal TLS tests. */
export async function createInternalCa(name = 'Partner Sync internal test CA'): Promise<InternalCa> {
  const ca = await generateCa(name);
  return {
    caPem: ca.cert,
    async issue(commonName = 'localhost', usages = { serverAuth: true, clientAuth: true }) {
      const leaf = await generate([{ name: 'commonName', value: commonName }], {
        keySize: 2048,
        algorithm: 'sha256',
        ca: { key: ca.private, cert: ca.cert },
        extensions: [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
          { name: 'extKeyUsage', ...usages },
          {
            name: 'subjectAltName',
            altNames: [
              { type: 2, value: 'localhost' },
              { type: 7, ip: '127.0.0.1' },
            ],
          },
        ],
      });
      return { cert: leaf.cert, key: leaf.private };
    },
  };
}
