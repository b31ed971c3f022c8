/**
 * A throwaway certificate authority and a `localhost` server certificate it signed,
 * for HTTPS photo hosts in tests. The CA file goes to the system under test as
 * NODE_EXTRA_CA_CERTS (the catalog trusts what Node trusts; README "Configuration").
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface TestPki {
  /** PEM of the CA certificate. */
  caCert: string;
  /** A file holding caCert (for NODE_EXTRA_CA_CERTS). */
  caFile: string;
  /** Server key and certificate for the name `localhost`. */
  server: { key: string; cert: string };
}

export async function makeTestPki(): Promise<TestPki> {
  const ca = await generate([{ name: 'commonName', value: 'Partner Sync test CA' }], {
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] },
    ],
  });
  const dir = mkdtempSync(join(tmpdir(), 'psync-pki-'));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.cert);
  return { caCert: ca.cert, caFile, server: { key: leaf.private, cert: leaf.cert } };
}
