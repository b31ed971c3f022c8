import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePrivateDir, securePrivateDataDir, tightenTree } from './private-dir';

const modeOf = (p: string) => statSync(p).mode & 0o7777;

describe('private DATA_DIR', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'psync-private-'));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  test('narrows directories to 0700 and files to their owner bits; leaves private entries and symlink targets alone', () => {
    const root = join(base, 'data');
    mkdirSync(join(root, 'postgres', 'base'), { recursive: true });
    chmodSync(root, 0o755);
    chmodSync(join(root, 'postgres'), 0o777);
    chmodSync(join(root, 'postgres', 'base'), 0o700);
    writeFileSync(join(root, 'postgres', 'base', '1259'), 'x', { mode: 0o666 });
    chmodSync(join(root, 'postgres', 'base', '1259'), 0o666);
    writeFileSync(join(root, 'postgres', 'PG_VERSION'), '17', { mode: 0o600 });
    writeFileSync(join(root, 'tool'), '#!', { mode: 0o755 });
    chmodSync(join(root, 'tool'), 0o755);
    const outside = join(base, 'outside');
    writeFileSync(outside, 'shared', { mode: 0o644 });
    chmodSync(outside, 0o644);
    symlinkSync(outside, join(root, 'link'));

    const result = tightenTree(root);
    expect(result).toMatchObject({ directories: 2, files: 2, failed: [], foreignRoot: false });
    expect(result.paths.sort()).toEqual(['.', 'postgres', 'postgres/base/1259', 'tool']);
    expect(modeOf(root)).toBe(0o700);
    expect(modeOf(join(root, 'postgres'))).toBe(0o700);
    expect(modeOf(join(root, 'postgres', 'base', '1259'))).toBe(0o600);
    expect(modeOf(join(root, 'postgres', 'PG_VERSION'))).toBe(0o600);
    expect(modeOf(join(root, 'tool'))).toBe(0o700);
    expect(modeOf(outside)).toBe(0o644);
    // Nothing left to do the second time.
    expect(tightenTree(root)).toMatchObject({ directories: 0, files: 0, paths: [] });
  });

  test('a missing DATA_DIR is no error and is not created', () => {
    expect(tightenTree(join(base, 'absent'))).toMatchObject({ directories: 0, files: 0 });
    expect(() => statSync(join(base, 'absent'))).toThrow();
  });

  test('one log line with counts and relative paths, never contents; none when nothing was open', () => {
    const root = join(base, 'data');
    makePrivateDir(join(root, 'keys'));
    writeFileSync(join(root, 'keys', 'operator.token'), 'psop_secret-value', { mode: 0o644 });
    chmodSync(join(root, 'keys', 'operator.token'), 0o644);
    const lines: { level: string; obj: unknown; msg: string }[] = [];
    const record = (level: string) => (obj: unknown, msg: string) => void lines.push({ level, obj, msg });
    const log = { warn: record('warn'), error: record('error'), info: record('info') } as never;

    securePrivateDataDir(root, log);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', obj: { event: 'data_dir.narrowed', data_dir: root, directories: 0, files: 1, paths: ['keys/operator.token'] } });
    expect(JSON.stringify(lines)).not.toContain('psop_secret-value');

    securePrivateDataDir(root, log);
    expect(lines).toHaveLength(1);
  });

  test('a shared directory (sticky bit, like /tmp) is refused, not narrowed', () => {
    const shared = join(base, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const log = { warn: jest.fn(), error: jest.fn(), info: jest.fn() } as never;
    expect(() => securePrivateDataDir(shared, log)).toThrow(/shared directory/);
    expect(() => makePrivateDir(shared)).toThrow(/shared directory/);
    expect(modeOf(shared)).toBe(0o1777);
  });

  test('makePrivateDir creates every missing directory 0700 and narrows an existing one', () => {
    makePrivateDir(join(base, 'a', 'b'));
    expect(modeOf(join(base, 'a'))).toBe(0o700);
    expect(modeOf(join(base, 'a', 'b'))).toBe(0o700);
    chmodSync(join(base, 'a', 'b'), 0o755);
    makePrivateDir(join(base, 'a', 'b'));
    expect(modeOf(join(base, 'a', 'b'))).toBe(0o700);
  });
});
