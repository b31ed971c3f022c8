/**
 * Static checks of deploy/Dockerfile and .dockerignore. No Docker
 * engine runs on these machines, so the image is never built here: this parses the
 * instructions and checks what the chart and the runbook rely on (multi-stage, a
 * numeric non-root user, the entry point and role argument, the exposed ports, the
 * migrations beside the compiled code, nothing fetched with ADD).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/helm';
import { dockerignoreMatcher, execForm, parseCopy, readDockerfile, readDockerignore } from '../support/dockerfile';

const { text: dockerfile, instructions, stages, runtime: runtimeStage } = readDockerfile();
const runtime = runtimeStage.instructions;
const inRuntime = (kw: string) => runtime.filter((i) => i.keyword === kw);

describe('deploy/Dockerfile', () => {
  test('is multi-stage: dependencies, build, and a small runtime base', () => {
    const froms = instructions.filter((i) => i.keyword === 'FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms.slice(0, -1)) expect(f.args).toMatch(/\s+AS\s+[a-z][a-z0-9-]*$/i);
    expect(stages).toHaveLength(froms.length);
    // Node 24 LTS: Node 20 reached end of life in April 2026.
    expect(runtimeStage.base).toMatch(/^(node:24[\w.-]*-(bookworm-)?slim|gcr\.io\/distroless\/nodejs24)/);
  });

  test('installs with npm ci, builds with npm run build and prunes to production dependencies', () => {
    const runs = instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm run build\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm prune\b.*--omit=dev/.test(r))).toBe(true);
    // Nothing from the build tool chain runs in the runtime stage.
    for (const r of inRuntime('RUN')) expect(r.args).not.toMatch(/\bnpm (ci|install|run)\b/);
  });

  test('builds the one shipped file with every SQL file embedded, and copies no SQL beside it', () => {
    expect(dockerfile).toMatch(/RUN npm run build/);
    expect(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).toMatch(/"build": "[^"]*node deploy\/build-main\.mjs --force/);
    expect(dockerfile).toMatch(/test -f dist\/psync\.cjs/);
    expect(dockerfile).not.toMatch(/\*\.sql/);
    expect(readFileSync(join(REPO_ROOT, 'deploy', 'build-main.mjs'), 'utf8')).toMatch(/__PSYNC_SQL_FILES__/);
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

  test('starts node dist/psync.cjs (the shipped build) with the role as argument, "all" by default', () => {
    const entry = inRuntime('ENTRYPOINT');
    const cmd = inRuntime('CMD');
    expect(entry).toHaveLength(1);
    expect(execForm(entry[0]!.args)).toEqual(['node', 'dist/psync.cjs']);
    expect(execForm(cmd[0]!.args)).toEqual(['all']);
    // What npm start and the system tests run too.
    expect(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).toMatch(/"start": "node deploy\/build-main\.mjs && exec node dist\/psync\.cjs"/);
    // bin/psync runs the CLI bundle the image's build makes (deploy/build-cli.mjs).
    expect(readFileSync(join(REPO_ROOT, 'bin', 'psync'), 'utf8')).toContain('dist/psync-cli.cjs');
    expect(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).toMatch(/"build": "[^"]*node deploy\/build-cli\.mjs/);
  });

  test('exposes the gateway, internal, health-only and metrics ports', () => {
    const ports = inRuntime('EXPOSE').flatMap((i) => i.args.split(/\s+/));
    expect(ports.sort()).toEqual(['8080', '8081', '8082', '9464']);
  });

  test('limits glibc malloc arenas (image decodes would otherwise keep freed memory)', () => {
    expect(
      inRuntime('ENV')
        .map((i) => i.args)
        .join(' '),
    ).toMatch(/MALLOC_ARENA_MAX=2\b/);
  });

  test('has a HEALTHCHECK, or says why not', () => {
    const hc = inRuntime('HEALTHCHECK');
    expect(hc).toHaveLength(1);
    if (/^NONE$/i.test(hc[0]!.args)) expect(hc[0]!.comment).toMatch(/Kubernetes/);
  });

  test('keeps writes to /tmp and DATA_DIR (a directory the non-root user owns)', () => {
    const env = inRuntime('ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toMatch(/DATA_DIR=\/var\/lib\/psync\b/);
    expect(dockerfile).toMatch(/chown 10001:10001 \/var\/lib\/psync/);
    // Application files stay root-owned: no --chown on the runtime COPYs.
    for (const c of inRuntime('COPY')) expect(c.args).not.toMatch(/--chown/);
  });

  test('every COPY source exists and is not excluded by .dockerignore', () => {
    const ignore = dockerignoreMatcher();
    const sources = instructions
      .filter((i) => i.keyword === 'COPY')
      .map((i) => parseCopy(i.args))
      .filter((c) => c.from === undefined)
      .flatMap((c) => c.sources);
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      expect({ s, exists: existsSync(join(REPO_ROOT, s)) }).toEqual({ s, exists: true });
      expect({ s, ignored: ignore.ignored(s) }).toEqual({ s, ignored: false });
    }
  });
});

describe('.dockerignore', () => {
  test('keeps local state, dependencies, build output and secrets out of the build context', () => {
    const ignore = readDockerignore();
    for (const entry of ['node_modules', 'dist', 'gen', '.git', '.data', '.tmp', '.env', '.env.*']) expect(ignore).toContain(entry);
  });

  test('is matched as Docker does: from the context root, `**` across directories, a matched directory takes its contents', () => {
    const { ignored } = dockerignoreMatcher();
    const out = ['node_modules/pino/package.json', 'services/kit/runtime/config.test.ts', 'bin/cli/args.test.ts', '.env.local', 'test/support/system.ts', 'dist'];
    const kept = [
      'services/kit/runtime/config.ts',
      'services/kit/migrations/0001_outbox.sql',
      'services/kit/baseline.sql',
      'services/calendar/functions/put_block.sql',
      'bin/psync',
      'package-lock.json',
      'proto/psync/admin/v1/admin.proto',
    ];
    expect(out.filter((p) => !ignored(p))).toEqual([]);
    expect(kept.filter((p) => ignored(p))).toEqual([]);
    // Anchored at the root: only the top-level docs/ is listed, not every folder named docs.
    expect(dockerignoreMatcher(['docs']).ignored('services/docs/x.ts')).toBe(false);
    expect(dockerignoreMatcher(['**/*.test.ts', '!keep.test.ts']).ignored('keep.test.ts')).toBe(false);
  });
});
