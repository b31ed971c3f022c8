/**
 * The shipped build (deploy/build-main.mjs): one file with every SQL file migrate reads embedded,
 * rebuilt when a source changed and not otherwise (what `npm start` and jest's global
 * set-up rely on). Built in a copy of the tree, so the checkout's own dist/ is never
 * touched while other test files run it.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/process';
import { shippedSql } from '../support/embedded-sql';

let copy: string;

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'psync-build-'));
  for (const p of ['main.ts', 'services', 'gateway', 'gen', 'bin', 'tsconfig.json', 'package.json', 'deploy/build-main.mjs', 'deploy/input-stamp.mjs']) {
    cpSync(join(ROOT, p), join(copy, p), { recursive: true, filter: (src) => !src.endsWith('.test.ts') });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
});

afterAll(() => rmSync(copy, { recursive: true, force: true }));

const build = () => execFileSync(process.execPath, [join(copy, 'deploy', 'build-main.mjs')], { cwd: copy, encoding: 'utf8' });
const built = () => statSync(join(copy, 'dist', 'psync.cjs')).mtimeMs;

test('builds once, then only after a source changed', () => {
  build();
  const first = built();
  build();
  expect(built()).toBe(first); // nothing changed: not rebuilt

  appendFileSync(join(copy, 'gateway', 'server.ts'), '\n// a change\n');
  build();
  const second = built();
  expect(second).toBeGreaterThan(first);

  writeFileSync(join(copy, 'services', 'calendar', 'functions', 'limits.sql'), readFileSync(join(ROOT, 'services', 'calendar', 'functions', 'limits.sql'), 'utf8') + '\n');
  build();
  expect(built()).toBeGreaterThan(second); // SQL is an input too
});

test('the baselines, the migrations after them and the repeatable SQL files are embedded in the one file; the migrations a baseline replaces are not', () => {
  build();
  const bundle = readFileSync(join(copy, 'dist', 'psync.cjs'), 'utf8');
  const { embedded, history } = shippedSql();
  expect(embedded.filter((f) => f.endsWith('/baseline.sql'))).toHaveLength(5);
  expect(embedded.length).toBeGreaterThan(20);
  expect(history.length).toBeGreaterThan(30);
  for (const f of embedded) expect({ f, embedded: bundle.includes(JSON.stringify(f)) }).toEqual({ f, embedded: true });
  for (const f of history) expect({ f, embedded: bundle.includes(JSON.stringify(f)) }).toEqual({ f, embedded: false });
  expect(bundle).not.toMatch(/require\("tsx/);
});
