/**
 * Static checks of deploy/Dockerfile and .dockerignore (issue 7, item 1). No Docker
 * engine runs on these machines, so the image is never built here: this parses the
 * instructions and checks what the chart and the runbook rely on (multi-stage, a
 * numeric non-root user, the entry point and role argument, the exposed ports, the
 * migrations beside the compiled code, nothing fetched with ADD).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/helm';

interface Instruction {
  keyword: string;
  args: string;
  /** Comment lines directly above the instruction. */
  comment: string;
  line: number;
}

/** Splits a Dockerfile into instructions, joining `\` continuations and keeping the comments above each. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  let comment: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (trimmed === '') {
      comment = [];
      continue;
    }
    if (trimmed.startsWith('#')) {
      comment.push(trimmed.replace(/^#\s?/, ''));
      continue;
    }
    const start = i + 1;
    let body = trimmed;
    while (body.endsWith('\\') && i + 1 < lines.length) {
      body = `${body.slice(0, -1)} ${lines[++i]!.trim()}`;
    }
    const m = /^(\S+)\s*(.*)$/.exec(body)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), comment: comment.join('\n'), line: start });
    comment = [];
  }
  return out;
}

const dockerfile = readFileSync(join(REPO_ROOT, 'deploy', 'Dockerfile'), 'utf8');
const instructions = parseDockerfile(dockerfile);
const stages: Instruction[][] = [];
for (const ins of instructions) {
  if (ins.keyword === 'FROM') stages.push([]);
  stages[stages.length - 1]?.push(ins);
}
const runtime = stages[stages.length - 1]!;
const inRuntime = (kw: string) => runtime.filter((i) => i.keyword === kw);

describe('deploy/Dockerfile', () => {
  test('is multi-stage: dependencies, build, and a small runtime base', () => {
    const froms = instructions.filter((i) => i.keyword === 'FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms.slice(0, -1)) expect(f.args).toMatch(/\s+AS\s+[a-z][a-z0-9-]*$/i);
    const args = new Map(instructions.filter((i) => i.keyword === 'ARG').map((i) => i.args.split('=') as [string, string]));
    const base = froms[froms.length - 1]!.args.split(/\s+/)[0]!.replace(/^\$\{(\w+)\}$/, (_m, name: string) => args.get(name) ?? name);
    expect(base).toMatch(/^(node:20[\w.-]*-(bookworm-)?slim|gcr\.io\/distroless\/nodejs20)/);
  });

  test('installs with npm ci, builds with npm run build and prunes to production dependencies', () => {
    const runs = instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm run build\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm prune\b.*--omit=dev/.test(r))).toBe(true);
    // Nothing from the build tool chain runs in the runtime stage.
    for (const r of inRuntime('RUN')) expect(r.args).not.toMatch(/\bnpm (ci|install|run)\b/);
  });

  test('copies the .sql migrations next to the compiled modules (tsc does not)', () => {
    expect(dockerfile).toMatch(/dist\/services\/\$name\/migrations/);
    expect(dockerfile).toMatch(/\*\.sql/);
    const migrate = readFileSync(join(REPO_ROOT, 'services', 'kit', 'migrate.ts'), 'utf8');
    expect(migrate).toMatch(/join\(__dirname, 'migrations'\)/);
  });

  test('the runtime stage runs as a numeric non-root user', () => {
    const users = inRuntime('USER');
    expect(users.length).toBeGreaterThan(0);
    const last = users[users.length - 1]!.args;
    const [uid, gid] = last.split(':');
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    expect(Number(uid)).toBe(10001); // the chart's runAsUser
    if (gid !== undefined) expect(Number(gid)).toBeGreaterThan(0);
  });

  test('fetches nothing with ADD (no remote URLs, no archives unpacked implicitly)', () => {
    for (const i of instructions.filter((x) => x.keyword === 'ADD')) expect(i.args).not.toMatch(/https?:\/\/|git@/);
    expect(instructions.filter((x) => x.keyword === 'ADD')).toEqual([]);
  });

  test('starts node dist/services/main.js with the role as argument, "all" by default', () => {
    const entry = inRuntime('ENTRYPOINT');
    const cmd = inRuntime('CMD');
    expect(entry).toHaveLength(1);
    expect(JSON.parse(entry[0]!.args)).toEqual(['node', 'dist/services/main.js']);
    expect(JSON.parse(cmd[0]!.args)).toEqual(['all']);
    // tsc -p tsconfig.build.json (rootDir ".") puts services/main.ts at dist/services/main.js.
    const build = JSON.parse(readFileSync(join(REPO_ROOT, 'tsconfig.build.json'), 'utf8'));
    const base = JSON.parse(readFileSync(join(REPO_ROOT, 'tsconfig.json'), 'utf8'));
    expect(build.compilerOptions?.outDir ?? base.compilerOptions.outDir).toBe('dist');
    expect(build.compilerOptions?.rootDir ?? base.compilerOptions.rootDir).toBe('.');
    expect(build.include).toEqual(expect.arrayContaining(['services', 'gateway', 'bin/cli', 'gen']));
    // bin/psync falls back to the compiled CLI the image carries.
    expect(readFileSync(join(REPO_ROOT, 'bin', 'psync'), 'utf8')).toContain('dist/bin/cli/main.js');
  });

  test('exposes the gateway, internal and metrics ports', () => {
    const ports = inRuntime('EXPOSE').flatMap((i) => i.args.split(/\s+/));
    expect(ports.sort()).toEqual(['8080', '8081', '9464']);
  });

  test('has a HEALTHCHECK, or says why not', () => {
    const hc = inRuntime('HEALTHCHECK');
    expect(hc).toHaveLength(1);
    if (/^NONE$/i.test(hc[0]!.args)) expect(hc[0]!.comment).toMatch(/Kubernetes/);
  });

  test('keeps writes to /tmp and DATA_DIR (a directory the non-root user owns)', () => {
    const env = inRuntime('ENV').map((i) => i.args).join(' ');
    expect(env).toMatch(/DATA_DIR=\/var\/lib\/psync\b/);
    expect(dockerfile).toMatch(/chown 10001:10001 \/var\/lib\/psync/);
    // Application files stay root-owned: no --chown on the runtime COPYs.
    for (const c of inRuntime('COPY')) expect(c.args).not.toMatch(/--chown/);
  });

  test('every COPY source exists and is not excluded by .dockerignore', () => {
    const ignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const sources = instructions
      .filter((i) => i.keyword === 'COPY' && !/--from=/.test(i.args))
      .flatMap((i) => i.args.split(/\s+/).filter((a) => !a.startsWith('--')).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      expect({ s, exists: existsSync(join(REPO_ROOT, s)) }).toEqual({ s, exists: true });
      expect({ s, ignored: ignore.includes(s) || ignore.includes(`${s}/`) }).toEqual({ s, ignored: false });
    }
  });
});

describe('.dockerignore', () => {
  test('keeps local state, dependencies, build output and secrets out of the build context', () => {
    const ignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const entry of ['node_modules', 'dist', 'gen', '.git', '.data', '.tmp', '.env', '.env.*']) expect(ignore).toContain(entry);
  });
});
