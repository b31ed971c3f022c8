/**
 * The benches run the system as the container image does: the shipped build
 * (deploy/build-main.mjs, `node dist/psync.cjs`: what the image, `npm start` and the
 * system tests run), not through tsx; their own helper servers (bench/support/*.ts) as
 * JavaScript compiled by tsc. tsx transpiles on the fly with esbuild's keepNames, which wraps every function
 * created at run time in a `__name()` call (an Object.defineProperty per closure): a cost
 * production never pays, and one that grows with how many closures a request creates.
 * BENCH_RUNTIME=tsx runs the sources through tsx instead.
 *
 * The build goes to `.tmp/bench-dist` (ignored by git) with the project's tsconfig.json
 * (services, gateway, bench and their imports), and the `.sql` files (forward-only migrations and repeatable SQL functions)
 * are copied beside the compiled modules, as the Dockerfile does.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export type Runtime = 'compiled' | 'tsx';

export function benchRuntime(): Runtime {
  const r = process.env.BENCH_RUNTIME ?? 'compiled';
  if (r !== 'compiled' && r !== 'tsx') throw new Error(`BENCH_RUNTIME must be compiled or tsx, not ${r}`);
  return r;
}

/** Compiles the project into `<root>/.tmp/bench-dist`; returns that directory. */
export function buildForBench(root: string): string {
  execFileSync(process.execPath, [join(root, 'deploy', 'build-main.mjs')], { cwd: root, stdio: 'inherit' });
  const out = join(root, '.tmp', 'bench-dist');
  rmSync(out, { recursive: true, force: true });
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.json'), '--outDir', out], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    // tsc emits despite type errors (no noEmitOnError): a type error elsewhere in the tree
    // (work in progress) does not stop a benchmark whose entry points were emitted. Type
    // checking is `npm run typecheck`'s job.
    if (!existsSync(join(out, 'main.js'))) throw err;
    const lines = String((err as { stdout?: Buffer }).stdout ?? '')
      .split('\n')
      .filter(Boolean);
    process.stderr.write(`compiled-build: tsc reported ${lines.length} line(s) of errors; the emitted JavaScript is used:\n${lines.slice(0, 5).join('\n')}\n`);
  }
  const services = join(root, 'services');
  for (const name of readdirSync(services)) {
    for (const kind of ['migrations', 'functions']) {
      const from = join(services, name, kind);
      if (!existsSync(from)) continue;
      const to = join(out, 'services', name, kind);
      mkdirSync(to, { recursive: true });
      for (const f of readdirSync(from)) if (f.endsWith('.sql')) copyFileSync(join(from, f), join(to, f));
    }
  }
  return out;
}

/**
 * The node arguments that run `source` (a path relative to the project root, e.g.
 * `main.ts`) in the chosen runtime.
 */
export function entryArgs(runtime: Runtime, root: string, dist: string | undefined, source: string): string[] {
  if (runtime === 'tsx') return ['--import', 'tsx', join(root, source)];
  if (!dist) throw new Error('compiled runtime without a build');
  if (source === 'main.ts') return [join(root, 'dist', 'psync.cjs')];
  return [join(dist, source.replace(/\.ts$/, '.js'))];
}
