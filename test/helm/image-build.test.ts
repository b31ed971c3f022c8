/**
 * deploy/Dockerfile built and run WITHOUT a Docker engine (none runs on these
 * machines), driven by the Dockerfile itself (parsed by test/support/dockerfile.ts,
 * the parser test/helm/dockerfile.test.ts uses too):
 *
 * - build stage (after its parent, deps): the context files its COPYs name, filtered
 *   by .dockerignore, are copied into a temporary directory standing for its WORKDIR,
 *   and its RUNs run there in order with `sh -c` (npm run build, the `test -f`
 *   checks). `npm ci` and `npm prune` are not run (NOT_RUN says why);
 *   what prune guarantees is checked instead: every package the compiled code
 *   requires is a production dependency.
 * - runtime stage: what its COPY --from=build instructions name is assembled in a
 *   second directory standing for its WORKDIR and made read-only (the read-only root
 *   file system); each VOLUME is a fresh writable directory; the image's ENV is used
 *   (nothing of this machine's environment), with the volumes' paths, the ports and
 *   HOST replaced. ENTRYPOINT + CMD start from there as the image's USER when this
 *   runs as root (root ignores file modes: the uid is what makes read-only real).
 *
 * Not covered (docs/operations.md, "Build the image"): pulling the base image, the
 * runtime stage's RUN (groupadd/useradd, npm removed), what the layers really hold,
 * and the real `npm ci` / `npm prune`.
 *
 * DATABASE_URL / NATS_URL set (CI): the image runs against them too, on a scratch
 * database and a unique BUS_PREFIX (test/support/system.ts).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative } from 'node:path';
import { CONSOLE_CSP } from '../../gateway/console';
import { applyEnv, Copy, dockerignoreMatcher, execForm, parseCopy, readDockerfile, splitFlags } from '../support/dockerfile';
import { ROOT, waitForLine } from '../support/process';
import { shippedSql } from '../support/embedded-sql';
import {
  backends,
  createScratchDatabase,
  deleteBusStream,
  eventPattern,
  exitOf,
  freePort,
  jsonLogs,
  linesOf,
  randomKey,
  runCommand,
  RunResult,
  uniqueBusPrefix,
} from '../support/system';

const dockerfile = readDockerfile();
const ignore = dockerignoreMatcher();
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };

/** The build chain's RUNs that are not run here, and why. */
const NOT_RUN: { pattern: RegExp; why: string; instead?: (workdir: string) => void }[] = [
  {
    pattern: /\bnpm ci\b/,
    why: "installing again costs minutes and the network: node_modules is a symlink to the repository's own, installed by npm ci from the same package-lock.json",
    instead: (workdir) => symlinkSync(join(ROOT, 'node_modules'), join(workdir, 'node_modules')),
  },
  {
    pattern: /\bnpm prune\b/,
    why: "node_modules is shared: prune would delete the dev dependencies from the repository's real node_modules (and `rm -rf /root/.npm` would empty this machine's npm cache); the 'production dependencies' test checks what prune guarantees",
  },
];

/**
 * Development dependencies (not in the image) the compiled code loads only when asked
 * to, and what stops that request in the image.
 */
const LOADED_ON_REQUEST: Record<string, string> = {
  'pino-pretty': 'LOG_FORMAT=pretty only, which the configuration refuses where pino-pretty is not installed (services/kit/runtime/config.ts)',
};

/** The runtime stage's set-up RUN (user, DATA_DIR owner, npm removed): emulated by running as USER with volumes the user owns. */
const RUNTIME_SETUP = /\buseradd\b/;

/** The node base image's PATH, this machine's node first. */
const BASE_PATH = `${dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

/** A stage's file system: container paths under its WORKDIR map to a host directory. */
class StageDir {
  private workdir = '';

  constructor(readonly host: string) {}

  setWorkdir(dir: string, where: string): void {
    if (this.workdir && this.workdir !== dir) throw new Error(`${where}: a second WORKDIR (${dir}) is not emulated`);
    this.workdir = dir;
    mkdirSync(this.host, { recursive: true });
  }

  /** The host path of a container path (a relative one from WORKDIR); throws outside WORKDIR. */
  resolve(path: string, where: string): string {
    if (!this.workdir) throw new Error(`${where}: no WORKDIR yet`);
    const rel = posix.relative(this.workdir, posix.resolve(this.workdir, path));
    if (rel.startsWith('..')) throw new Error(`${where}: ${path} is outside WORKDIR ${this.workdir}: not emulated`);
    return join(this.host, rel);
  }

  /** `path` if it lies under WORKDIR, as a host path; else undefined. */
  map(path: string): string | undefined {
    const rel = posix.relative(this.workdir, path);
    return this.workdir && posix.isAbsolute(path) && !rel.startsWith('..') ? join(this.host, rel) : undefined;
  }
}

/** Calls `visit` for every entry below `dir` (not following symbolic links), parents first. */
function walk(dir: string, visit: (path: string, isDir: boolean, isLink: boolean) => void): void {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const st = lstatSync(path);
    visit(path, st.isDirectory(), st.isSymbolicLink());
    if (st.isDirectory()) walk(path, visit);
  }
}

/** Sets or clears the write bits of `dir` and everything below it, symbolic links (node_modules) left alone. */
function setWritable(dir: string, writable: boolean): void {
  const apply = (path: string) => {
    const mode = lstatSync(path).mode & 0o7777;
    chmodSync(path, writable ? mode | 0o200 : mode & ~0o222);
  };
  if (!writable) walk(dir, (path, _isDir, isLink) => isLink || apply(path));
  apply(dir);
  if (writable) walk(dir, (path, _isDir, isLink) => isLink || apply(path));
}

/** Every entry below `dir` with its mode, size and modification time: what a write would change. */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  walk(dir, (path) => {
    const st = lstatSync(path);
    out.push(`${relative(dir, path)} ${st.mode.toString(8)} ${st.isDirectory() ? '-' : st.size} ${st.mtimeMs}`);
  });
  return out;
}

/** Files below `dir` (skipping the names in `skip`), relative to `dir`. */
function filesBelow(dir: string, skip: string[] = []): string[] {
  const out: string[] = [];
  const visit = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (skip.includes(relative(dir, path))) continue;
      if (lstatSync(path).isDirectory()) visit(path);
      else out.push(relative(dir, path));
    }
  };
  visit(dir);
  return out.sort();
}

/** A RUN runs on this machine, not in the stage: an absolute path (other than /dev/null) would be the host's. */
function refuseHostPaths(command: string, where: string): void {
  const abs = command.match(/(?<![\w.$}*-])\/(?!dev\/null\b)[\w.-][^\s"';|&)]*/g);
  if (abs) throw new Error(`${where}: names the absolute path(s) ${abs.join(', ')}; running it here would touch this machine, not the stage: not emulated`);
}

/**
 * COPY from the build context (the repository), as docker build does: .dockerignore
 * applies; a directory's contents are copied. Returns the top-level names written
 * into WORKDIR.
 */
function copyFromContext(copy: Copy, stage: StageDir, where: string): string[] {
  const written: string[] = [];
  const workdir = stage.resolve('.', where);
  const intoDir = copy.dest.endsWith('/') || copy.sources.length > 1;
  for (const src of copy.sources) {
    if (/[*?[]/.test(src)) throw new Error(`${where}: wildcard sources are not emulated`);
    const rel = posix.normalize(src).replace(/\/+$/, '');
    if (rel.startsWith('..') || posix.isAbsolute(rel)) throw new Error(`${where}: ${src} lies outside the build context`);
    if (ignore.ignored(rel)) throw new Error(`${where}: ${src} is excluded by .dockerignore (docker build would fail)`);
    const from = join(ROOT, rel);
    const isDir = lstatSync(from).isDirectory();
    const to = intoDir && !isDir ? join(stage.resolve(copy.dest, where), basename(rel)) : stage.resolve(copy.dest, where);
    cpSync(from, to, {
      recursive: true,
      filter: (path) => {
        const r = relative(ROOT, path);
        if (r === rel || !ignore.ignored(r)) return true;
        // An ignored directory is still walked when a `!` pattern might bring something back.
        return ignore.hasExceptions && lstatSync(path).isDirectory();
      },
    });
    const top = relative(workdir, to).split('/')[0]!;
    if (top) written.push(top);
    else written.push(...readdirSync(from).filter((n) => !ignore.ignored(posix.join(rel, n))));
  }
  return written;
}

interface BuildStage {
  stage: StageDir;
  /** RUN commands run, in order. */
  ran: string[];
  /** RUN commands not run (NOT_RUN). */
  skipped: string[];
  /** What the COPYs and the NOT_RUN replacements put at the top of WORKDIR. */
  provided: Set<string>;
}

/** Emulates `docker build --target build`: the chain deps → build, into `dir`. */
async function runBuildStage(dir: string): Promise<BuildStage> {
  const stage = new StageDir(dir);
  const result: BuildStage = { stage, ran: [], skipped: [], provided: new Set() };
  let env: Record<string, string> = {};
  for (const ins of dockerfile.chain('build')) {
    const where = `deploy/Dockerfile:${ins.line} ${ins.keyword}`;
    switch (ins.keyword) {
      case 'FROM': // the base image is not pulled; an earlier stage's instructions are in the chain
      case 'ARG':
      case 'LABEL':
        break;
      case 'WORKDIR':
        stage.setWorkdir(ins.args, where);
        break;
      case 'ENV':
        env = applyEnv(ins.args, env);
        break;
      case 'COPY': {
        const copy = parseCopy(ins.args);
        if (copy.from !== undefined) throw new Error(`${where}: COPY --from in the build chain is not emulated`);
        for (const name of copyFromContext(copy, stage, where)) result.provided.add(name);
        break;
      }
      case 'RUN': {
        const command = splitFlags(ins.args).rest;
        const skip = NOT_RUN.find((s) => s.pattern.test(command));
        if (skip) {
          skip.instead?.(stage.resolve('.', where));
          if (skip.instead) result.provided.add('node_modules');
          result.skipped.push(command);
          break;
        }
        refuseHostPaths(command, where);
        // This machine's environment (for npm and sh) with the stage's ENV; NODE_ENV as in a build stage: unset.
        const runEnv: Record<string, string | undefined> = { ...process.env, ...env };
        delete runEnv.NODE_ENV;
        const r = await runCommand('sh', ['-c', command], runEnv, 150000, { cwd: stage.resolve('.', where) });
        if (r.code !== 0) throw new Error(`${where} failed (exit ${r.code ?? r.signal}): ${command}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
        result.ran.push(command);
        break;
      }
      default:
        throw new Error(`${where}: ${ins.keyword} in the build chain is not emulated`);
    }
  }
  return result;
}

interface RuntimeImage {
  stage: StageDir;
  /** The image's ENV (container paths). */
  env: Record<string, string>;
  volumes: string[];
  /** USER as uid/gid, if numeric. */
  user?: { uid: number; gid: number };
  entrypoint: string[];
  cmd: string[];
  /** RUN commands not run (RUNTIME_SETUP). */
  notRun: string[];
}

/** Emulates the runtime stage: its COPY --from=<stage> instructions into `dir`, its metadata collected. */
function assembleRuntime(dir: string, stages: Record<string, StageDir>): RuntimeImage {
  const image: RuntimeImage = { stage: new StageDir(dir), env: { PATH: BASE_PATH }, volumes: [], entrypoint: [], cmd: [], notRun: [] };
  for (const ins of dockerfile.runtime.instructions) {
    const where = `deploy/Dockerfile:${ins.line} ${ins.keyword}`;
    switch (ins.keyword) {
      case 'FROM': // the base image is not pulled: this machine's node runs the code
      case 'ARG':
      case 'LABEL':
      case 'EXPOSE':
      case 'HEALTHCHECK':
      case 'STOPSIGNAL': // STOP_SIGNAL
        break;
      case 'RUN':
        if (!RUNTIME_SETUP.test(ins.args)) throw new Error(`${where}: a runtime RUN this emulation does not know; decide how to emulate it: ${ins.args}`);
        image.notRun.push(ins.args);
        break;
      case 'WORKDIR':
        image.stage.setWorkdir(ins.args, where);
        break;
      case 'COPY': {
        const copy = parseCopy(ins.args);
        const from = copy.from === undefined ? undefined : stages[copy.from];
        if (!from) throw new Error(`${where}: the runtime stage copies only from an emulated stage (${Object.keys(stages).join(', ')})`);
        for (const src of copy.sources) {
          const to = copy.dest.endsWith('/') || copy.sources.length > 1 ? posix.join(copy.dest, posix.basename(src)) : copy.dest;
          mkdirSync(dirname(image.stage.resolve(to, where)), { recursive: true });
          // verbatimSymlinks: node_modules stays the symlink to the repository's own.
          cpSync(from.resolve(src, where), image.stage.resolve(to, where), { recursive: true, verbatimSymlinks: true });
        }
        break;
      }
      case 'ENV':
        image.env = applyEnv(ins.args, image.env);
        break;
      case 'USER': {
        const m = /^(\d+)(?::(\d+))?$/.exec(ins.args);
        if (!m) throw new Error(`${where}: only a numeric USER is emulated`);
        image.user = { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
        break;
      }
      case 'VOLUME':
        image.volumes.push(...(ins.args.startsWith('[') ? execForm(ins.args) : ins.args.split(/\s+/)));
        break;
      case 'ENTRYPOINT':
        image.entrypoint = execForm(ins.args);
        break;
      case 'CMD':
        image.cmd = execForm(ins.args);
        break;
      default:
        throw new Error(`${where}: ${ins.keyword} in the runtime stage is not emulated`);
    }
  }
  if (image.entrypoint.length === 0) throw new Error("deploy/Dockerfile: no exec-form ENTRYPOINT in the runtime stage (the base image's is not emulated)");
  return image;
}

const asRoot = process.getuid?.() === 0;
let root = '';
const cleanups: (() => Promise<void> | void)[] = [];
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A fresh directory under the test's root standing for a VOLUME, owned by the image's user (as `chown 10001:10001 /var/lib/psync` does). */
function volumeDir(name: string, user: RuntimeImage['user']): string {
  const dir = mkdtempSync(join(root, `${name}-`));
  if (asRoot && user) chownSync(dir, user.uid, user.gid);
  return dir;
}

/**
 * The container's environment: the image's ENV only (none of this machine's), each
 * VOLUME path and WORKDIR path replaced by its host directory; then `overrides`.
 */
function containerEnv(image: RuntimeImage, volumes: Map<string, string>, overrides: Record<string, string>): Record<string, string> {
  const toHost = (p: string) => volumes.get(p) ?? image.stage.map(p) ?? p;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(image.env)) env[k] = k === 'PATH' ? v.split(':').map(toHost).join(':') : toHost(v);
  // useradd --home-dir /nonexistent: HOME exists nowhere.
  env.HOME = join(root, 'nonexistent');
  return { ...env, ...overrides };
}

/** DATABASE_URL / NATS_URL of the test environment (CI): a scratch database, a unique BUS_PREFIX, keys as a deployment sets them. */
async function backendEnv(): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  if (process.env.DATABASE_URL) {
    const db = await createScratchDatabase();
    cleanups.push(() => db.drop());
    Object.assign(env, { DATABASE_URL: db.url, TOKEN_SIGNING_KEY: randomKey(), SECRETS_ENCRYPTION_KEY: randomKey() });
  }
  if (process.env.NATS_URL) {
    const prefix = uniqueBusPrefix();
    cleanups.push(() => deleteBusStream(prefix));
    Object.assign(env, { NATS_URL: process.env.NATS_URL, BUS_PREFIX: prefix });
  }
  return env;
}

const STOP_SIGNAL = (dockerfile.runtime.instructions.find((i) => i.keyword === 'STOPSIGNAL')?.args ?? 'SIGTERM') as NodeJS.Signals;

describe(`deploy/Dockerfile emulated without an engine (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let build: BuildStage;
  let distDir: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'psync-image-'));
    // The image's user must reach the runtime directory and the volumes below it.
    chmodSync(root, 0o755);
    build = await runBuildStage(join(root, 'build'));
    distDir = build.stage.resolve('dist', 'test');
  }, 170000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch {
        // best effort
      }
    }
    if (!root) return;
    if (existsSync(join(root, 'app'))) setWritable(join(root, 'app'), true);
    // The node_modules symlinks go first, so removing the tree can never reach the repository's node_modules.
    for (const link of [join(root, 'build', 'node_modules'), join(root, 'app', 'node_modules')]) {
      if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(link);
    }
    rmSync(root, { recursive: true, force: true });
  });

  describe('build stage', () => {
    test('runs every RUN of deps → build but npm ci and npm prune; npm run build and the test -f checks pass', () => {
      expect(build.skipped).toEqual([expect.stringMatching(/\bnpm ci\b/), expect.stringMatching(/\bnpm prune\b/)]);
      expect(build.ran.some((r) => /\bnpm run build\b/.test(r))).toBe(true);
      expect(build.ran.some((r) => /test -f dist\/psync\.cjs/.test(r) && /test -f dist\/psync-cli\.cjs/.test(r))).toBe(true);
    });

    test('copies exactly what the COPYs name, .dockerignore applied (no tests, no local state)', () => {
      const workdir = build.stage.resolve('.', 'test');
      // What COPY and the node_modules symlink provide, plus what npm run build writes (gen/, dist/, console/dist/).
      expect(readdirSync(workdir).sort()).toEqual([...build.provided, 'dist', 'gen'].sort());
      const copied = filesBelow(workdir, ['node_modules', 'dist', 'gen', 'console/dist']);
      expect(copied.filter((f) => ignore.ignored(f) || f.endsWith('.test.ts'))).toEqual([]);
      expect(copied).toContain('main.ts');
      expect(copied).toContain('bin/psync');
    });

    test("embeds every module's baseline, the migrations after it and its repeatable SQL files in the one shipped file; dist holds no .sql", () => {
      const bundle = readFileSync(join(distDir, 'psync.cjs'), 'utf8');
      // The baselines, the migrations after them and the repeatable files; not the landed migrations a baseline replaces.
      const { embedded, history } = shippedSql();
      for (const name of embedded) expect({ name, embedded: bundle.includes(JSON.stringify(name)) }).toEqual({ name, embedded: true });
      for (const name of history) expect({ name, embedded: bundle.includes(JSON.stringify(name)) }).toEqual({ name, embedded: false });
      expect(embedded.length).toBeGreaterThan(20);
      expect(filesBelow(distDir).filter((f) => f.endsWith('.sql'))).toEqual([]);
    });

    test('production dependencies: every package dist/*.cjs requires is in package.json "dependencies" (npm prune --omit=dev keeps it)', () => {
      const required = new Map<string, string>(); // package -> first file requiring it
      const unresolved: string[] = [];
      for (const file of filesBelow(distDir).filter((f) => f.endsWith('.js') || f.endsWith('.cjs'))) {
        const text = readFileSync(join(distDir, file), 'utf8');
        for (const m of text.matchAll(/\b(?:require|import)\(\s*(['"])([^'"]+)\1\s*\)/g)) {
          const spec = m[2]!;
          if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
          if (spec.startsWith('.')) {
            // Relative: must exist inside dist (a require of test/ or bench/ code would not be in the image).
            const target = join(distDir, dirname(file), spec);
            if (!['', '.js', '.json', '/index.js'].some((ext) => existsSync(target + ext)) || relative(distDir, target).startsWith('..')) unresolved.push(`${file}: ${spec}`);
            continue;
          }
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          if (!required.has(name)) required.set(name, file);
        }
      }
      expect(unresolved).toEqual([]);
      expect(required.size).toBeGreaterThan(5);
      const always = [...required].filter(([name]) => !(name in LOADED_ON_REQUEST));
      const notProduction = always.filter(([name]) => !(name in pkg.dependencies)).map(([name, file]) => `${name} (required by dist/${file})`);
      expect(notProduction).toEqual([]);
      // What npm prune --omit=dev actually reads: the lock file's dev flag.
      expect(always.map(([name]) => name).filter((name) => lock.packages[`node_modules/${name}`]?.dev === true)).toEqual([]);
      // The exceptions are development dependencies the code still loads, or the list is stale.
      expect(Object.keys(LOADED_ON_REQUEST).filter((name) => !required.has(name) || name in pkg.dependencies)).toEqual([]);
    });
  });

  describe('runtime stage', () => {
    let image: RuntimeImage;
    let appDir: string;
    let before: string[];
    let volumes: Map<string, string>;
    let child: ChildProcess;
    const stderr: string[] = [];
    let ports: { PORT: string; INTERNAL_PORT: string; METRICS_PORT: string };
    const spawnAs = () => (asRoot && image.user ? { uid: image.user.uid, gid: image.user.gid } : {});

    beforeAll(async () => {
      appDir = join(root, 'app');
      image = assembleRuntime(appDir, { build: build.stage });
      setWritable(appDir, false);
      before = snapshot(appDir);
      volumes = new Map(image.volumes.map((v) => [v, volumeDir(basename(v), image.user)]));
      ports = { PORT: String(await freePort()), INTERNAL_PORT: String(await freePort()), METRICS_PORT: String(await freePort()) };
      const env = containerEnv(image, volumes, { ...ports, HOST: '127.0.0.1', ...(await backendEnv()) });
      child = spawn(image.entrypoint[0]!, [...image.entrypoint.slice(1), ...image.cmd], { cwd: appDir, env, stdio: ['ignore', 'pipe', 'pipe'], ...spawnAs() });
      children.add(child);
      child.stderr!.setEncoding('utf8').on('data', (d: string) => stderr.push(...linesOf(d)));
      try {
        await waitForLine(child, eventPattern('process.listening'), 90000);
      } catch (err) {
        throw new Error(`${(err as Error).message}\nstderr:\n${stderr.slice(-20).join('\n')}`, { cause: err });
      }
    }, 110000);

    test('holds only package.json, node_modules, dist (the two bundles), console/dist and bin/psync: no sources, read-only', () => {
      expect(readdirSync(appDir).sort()).toEqual(['bin', 'console', 'dist', 'node_modules', 'package.json']);
      expect(readdirSync(join(appDir, 'dist')).sort()).toEqual(['psync-cli.cjs', 'psync.cjs']);
      expect(readdirSync(join(appDir, 'console'))).toEqual(['dist']);
      expect(readdirSync(join(appDir, 'bin'))).toEqual(['psync']);
      expect(filesBelow(appDir, ['node_modules']).filter((f) => f.endsWith('.ts'))).toEqual([]);
      expect(lstatSync(join(appDir, 'bin', 'psync')).mode & 0o111).toBe(0o111);
      expect(lstatSync(appDir).mode & 0o222).toBe(0);
      // The image's own settings the start relies on.
      expect(image.env).toMatchObject({ NODE_ENV: 'production' });
      expect(image.volumes).toEqual(expect.arrayContaining([image.env.DATA_DIR, image.env.TMPDIR]));
      expect(image.notRun).toHaveLength(1);
    });

    test('starts as ENTRYPOINT + CMD say (node dist/psync.cjs all) and becomes ready: GET /readyz 200, /metrics and the console (console/dist) served', async () => {
      expect([...image.entrypoint, ...image.cmd]).toEqual(['node', 'dist/psync.cjs', 'all']);
      const deadline = Date.now() + 60000;
      let status = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        status = await fetch(`http://127.0.0.1:${ports.PORT}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${ports.METRICS_PORT}/metrics`)).status).toBe(200);
      const page = await fetch(`http://127.0.0.1:${ports.PORT}/console/`);
      expect([page.status, page.headers.get('content-security-policy'), (await page.text()).includes('/console/assets/')]).toEqual([200, CONSOLE_CSP, true]);
    });

    test('psync migrate (PATH=/app/bin:…) runs the compiled CLI against the running system', async () => {
      const env = containerEnv(image, volumes, { PSYNC_INTERNAL_URL: `http://127.0.0.1:${ports.INTERNAL_PORT}` });
      const expectMigrated = (r: RunResult) => {
        expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
        const lines = linesOf(r.stdout);
        expect(lines).toHaveLength(1);
        const out = JSON.parse(lines[0]!) as { migrated: boolean; schemas: string[] };
        expect(out.migrated).toBe(true);
        expect([...out.schemas].sort()).toEqual(['calendar', 'catalog', 'identity', 'notifications']);
      };
      // As an operator runs it (kubectl exec … -- psync migrate): found through the image's PATH.
      expectMigrated(await runCommand('psync', ['migrate'], env, 30000, { cwd: appDir, ...spawnAs() }));
      // The sources are absent, so bin/psync runs the bundle the build made without rebuilding it: traced with sh -x.
      const traced = await runCommand('sh', ['-x', join(appDir, 'bin', 'psync'), 'migrate'], env, 30000, { cwd: appDir, ...spawnAs() });
      expect(traced.stderr).toContain(`exec node ${appDir}/dist/psync-cli.cjs migrate`);
      expect(traced.stderr).not.toContain('build-cli.mjs');
      expectMigrated({ ...traced, stderr: traced.code === 0 ? '' : traced.stderr });
    });

    test(`${STOP_SIGNAL} (the STOPSIGNAL) exits 0, and the process wrote nothing outside its volumes (DATA_DIR, TMPDIR)`, async () => {
      child.kill(STOP_SIGNAL);
      const timer = setTimeout(() => child.kill('SIGKILL'), 30000);
      const code = await exitOf(child);
      clearTimeout(timer);
      expect({ code, stderr: stderr.slice(-20) }).toEqual({ code: 0, stderr: [] });
      expect(snapshot(appDir)).toEqual(before);
      const logs = jsonLogs((child as ChildProcess & { lines?: string[] }).lines ?? []);
      expect(logs.filter((l) => typeof l.level === 'number' && l.level >= 50)).toEqual([]);
      if (!process.env.DATABASE_URL) expect(readdirSync(volumes.get(image.env.DATA_DIR!)!)).toEqual(expect.arrayContaining(['postgres', 'keys']));
    });

    test('the migrate role (docker run <image> migrate) on a fresh DATA_DIR: one JSON line, exit 0', async () => {
      // Embedded default: PGlite under the fresh DATA_DIR; with DATABASE_URL a fresh scratch database.
      const fresh = new Map(image.volumes.map((v) => [v, volumeDir(`migrate-${basename(v)}`, image.user)]));
      const env = containerEnv(image, fresh, { ...(await backendEnv()), HOST: '127.0.0.1', METRICS_PORT: String(await freePort()) });
      const r = await runCommand(image.entrypoint[0]!, [...image.entrypoint.slice(1), 'migrate'], env, 90000, { cwd: appDir, ...spawnAs() });
      expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr.slice(-3000) }).toEqual({ code: 0, stderr: '' });
      const lines = linesOf(r.stdout);
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ migrated: true, schemas: expect.arrayContaining(['identity', 'catalog', 'calendar', 'notifications']) });
      expect(snapshot(appDir)).toEqual(before);
    }, 100000);
  });
});
