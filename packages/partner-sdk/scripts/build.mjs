/**
 * `npm run build` (and `prepack`, so `npm pack` ships a fresh build): compiles src/ to
 * the package's dist/:
 *
 *   dist/index.mjs   ES module, bundled by esbuild (the `import` condition)
 *   dist/index.cjs   CommonJS, bundled by esbuild (the `require` condition)
 *   dist/*.d.ts      declarations from tsc, for `require` (CommonJS, like the package)
 *   dist/*.d.mts     the same declarations with relative specifiers ending in .mjs,
 *                    for `import` (a .d.ts in a package without "type": "module" is
 *                    read as CommonJS)
 *   dist/vendor/     the declarations (and licences) of openapi-fetch and its helper
 *                    types, which the bundles contain
 *
 * The package has no dependencies: openapi-fetch is bundled, so the tarball installs
 * with nothing else from a registry (offline, behind a partner's own mirror).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

rmSync(dist, { recursive: true, force: true });

const shared = {
  entryPoints: [join(root, 'src', 'index.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  legalComments: 'eof',
  logLevel: 'warning',
};
await build({ ...shared, format: 'esm', outfile: join(dist, 'index.mjs') });
await build({ ...shared, format: 'cjs', outfile: join(dist, 'index.cjs') });

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

/** The bundled packages whose types are shipped in dist/vendor/, by module name. */
const VENDORED = ['openapi-fetch', 'openapi-typescript-helpers'];
const vendor = join(dist, 'vendor');
mkdirSync(vendor);
for (const name of VENDORED) {
  const home = dirname(require.resolve(`${name}/package.json`));
  writeFileSync(join(vendor, `${name}.d.ts`), readFileSync(join(home, 'dist', 'index.d.mts'), 'utf8'));
  copyFileSync(join(home, 'LICENSE'), join(vendor, `${name}.LICENSE`));
}

/** A specifier in an import, export or import() type: `from './x'`, `import("./x")`. */
const SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])([^'"]+)\2/g;

/** Points the vendored names at dist/vendor/ and, for `.d.mts`, ends relative specifiers in `.mjs`. */
function declarations(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) declarations(path);
    else if (name.endsWith('.d.ts')) {
      const text = readFileSync(path, 'utf8');
      const rewrite = (ext) =>
        text.replace(SPECIFIER, (whole, lead, quote, spec) => {
          let target = spec;
          if (VENDORED.includes(spec)) {
            target = relative(dir, join(vendor, spec));
            if (!target.startsWith('.')) target = `./${target}`;
          } else if (!spec.startsWith('.')) return whole;
          return `${lead}${quote}${target}${ext}${quote}`;
        });
      writeFileSync(path, rewrite(''));
      writeFileSync(path.replace(/\.d\.ts$/, '.d.mts'), rewrite('.mjs'));
    }
  }
}
declarations(dist);
console.log(`built ${pkg.name}@${pkg.version} into dist/ (ESM, CommonJS, declarations)`);
