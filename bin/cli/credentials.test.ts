import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CredentialError, describeSource, operatorTokenFileOf, resolveOperatorCredential } from './credentials';

describe("psync's operator credential", () => {
  let dir: string;
  const token = `psop_${'A'.repeat(43)}`;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'psync-cred-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function writeTokenFile(text: string): string {
    mkdirSync(join(dir, 'keys'), { recursive: true, mode: 0o700 });
    const file = join(dir, 'keys', 'operator.token');
    writeFileSync(file, text, { mode: 0o600 });
    return file;
  }

  test('PSYNC_TOKEN wins over the file (trimmed as the server trims OPERATOR_TOKEN)', () => {
    writeTokenFile(`${token}\n`);
    expect(resolveOperatorCredential({ PSYNC_TOKEN: ' from-env-0123456789 \n', DATA_DIR: dir })).toEqual({ token: 'from-env-0123456789', source: { kind: 'env' } });
  });

  test('without PSYNC_TOKEN (unset or empty) the file under DATA_DIR is read', () => {
    const file = writeTokenFile(`${token}\n`);
    for (const env of [{ DATA_DIR: dir }, { DATA_DIR: dir, PSYNC_TOKEN: '' }]) {
      expect(resolveOperatorCredential(env)).toEqual({ token, source: { kind: 'file', file } });
    }
  });

  test('DATA_DIR defaults to ./.data, from the current directory', () => {
    expect(operatorTokenFileOf({})).toBe(resolve('.data/keys/operator.token'));
  });

  test('no credential at all: one line naming PSYNC_TOKEN and the file looked for', () => {
    const file = join(dir, 'keys', 'operator.token');
    expect(() => resolveOperatorCredential({ DATA_DIR: dir })).toThrow(CredentialError);
    try {
      resolveOperatorCredential({ DATA_DIR: dir });
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toContain('PSYNC_TOKEN');
      expect(message).toContain(file);
      expect(message).not.toContain('\n');
    }
  });

  test('a damaged file or an unusable PSYNC_TOKEN: a clear line, never the value', () => {
    const file = writeTokenFile('short\n');
    expect(() => resolveOperatorCredential({ DATA_DIR: dir })).toThrow(/PSYNC_TOKEN.*damaged/);
    expect(() => resolveOperatorCredential({ DATA_DIR: dir })).toThrow(file);
    expect(() => resolveOperatorCredential({ PSYNC_TOKEN: 'has a space-0123456789' })).toThrow(/^PSYNC_TOKEN is not a usable credential/);
    expect(() => resolveOperatorCredential({ PSYNC_TOKEN: 'has a space-0123456789' })).not.toThrow(/space-0123456789/);
  });

  test('sources are described without the value', () => {
    expect(describeSource({ kind: 'env' })).toBe('PSYNC_TOKEN');
    expect(describeSource({ kind: 'file', file: '/x/keys/operator.token' })).toBe('the token in /x/keys/operator.token');
  });
});
