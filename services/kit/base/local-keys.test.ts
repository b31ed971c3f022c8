import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { localKeyPath, resolveSecretKey } from './local-keys';

describe('resolveSecretKey', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'psync-keys-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('a configured key wins and nothing is written', () => {
    const configured = randomBytes(32);
    expect(resolveSecretKey({ configured, dataDir: dir, embedded: true, name: 'token-signing' })).toEqual({ key: configured, origin: 'configured' });
    expect(() => statSync(join(dir, 'keys'))).toThrow();
  });

  test('not embedded and not configured: undefined (not configured), nothing written', () => {
    expect(resolveSecretKey({ dataDir: dir, embedded: false, name: 'token-signing' })).toBeUndefined();
    expect(() => statSync(join(dir, 'keys'))).toThrow();
  });

  test('embedded: generated once (32 bytes, file 0600 in a 0700 directory), then loaded', () => {
    const generated = resolveSecretKey({ dataDir: dir, embedded: true, name: 'token-signing' })!;
    const file = localKeyPath(dir, 'token-signing');
    expect(generated).toMatchObject({ origin: 'generated', file });
    const first = generated.key;
    expect(first).toHaveLength(32);
    expect(file).toBe(join(dir, 'keys', 'token-signing.key'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'keys')).mode & 0o777).toBe(0o700);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').equals(first)).toBe(true);
    const again = resolveSecretKey({ dataDir: dir, embedded: true, name: 'token-signing' })!;
    expect(again).toMatchObject({ origin: 'loaded', file });
    expect(again.key.equals(first)).toBe(true);
    // another name is another key
    const other = resolveSecretKey({ dataDir: dir, embedded: true, name: 'secrets-encryption' })!;
    expect(other.origin).toBe('generated');
    expect(other.key.equals(first)).toBe(false);
  });

  test('a damaged key file is an error, never silently replaced', () => {
    resolveSecretKey({ dataDir: dir, embedded: true, name: 'token-signing' });
    writeFileSync(localKeyPath(dir, 'token-signing'), 'short\n');
    expect(() => resolveSecretKey({ dataDir: dir, embedded: true, name: 'token-signing' })).toThrow(/damaged/);
  });

  test('key names must be plain', () => {
    expect(() => resolveSecretKey({ dataDir: dir, embedded: true, name: '../x' })).toThrow(/invalid key name/);
  });
});
