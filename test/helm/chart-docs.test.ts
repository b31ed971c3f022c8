/**
 * The chart's documents that are kept by tools, not by hand (helm/psync/README.md
 * "Values" and "Versions"): the README's values table is what `npm run chart:readme`
 * (deploy/chart-readme.mjs) generates from the `# --` comments of values.yaml, and
 * CHANGELOG.md has an entry for the Chart.yaml version, the newest one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CHART_DIR, REPO_ROOT } from '../support/helm';
import { runCommand } from '../support/system';

const GENERATOR = join(REPO_ROOT, 'deploy', 'chart-readme.mjs');

/** SemVer precedence of two plain x.y.z versions. */
function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

describe('helm/psync README values table', () => {
  test('regenerates identically from values.yaml (run `npm run chart:readme` after changing a `# --` comment)', async () => {
    const r = await runCommand(process.execPath, [GENERATOR, '--check'], { PATH: process.env.PATH });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  });

  test('every `# --` comment of values.yaml documents a key that exists, each one row of the table', async () => {
    const script = `import { documentedKeys } from ${JSON.stringify(GENERATOR)}; import { readFileSync } from 'node:fs'; console.log(JSON.stringify(documentedKeys(readFileSync(${JSON.stringify(join(CHART_DIR, 'values.yaml'))}, 'utf8'))));`;
    const r = await runCommand(process.execPath, ['--input-type=module', '-e', script], { PATH: process.env.PATH });
    expect(r.code).toBe(0);
    const keys = JSON.parse(r.stdout) as { path: string[]; description: string }[];
    const text = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8');
    expect(keys).toHaveLength(text.split('\n').filter((l) => /^\s*# -- /.test(l)).length);
    const values = parse(text) as Record<string, unknown>;
    const missing = keys.filter((k) => k.path.reduce<any>((v, p) => (v == null ? undefined : v[p]), values) === undefined);
    expect(missing).toEqual([]);
    const readme = readFileSync(join(CHART_DIR, 'README.md'), 'utf8');
    for (const k of keys) expect(readme).toContain(`| \`${k.path.join('.')}\` |`);
  });
});

describe('helm/psync CHANGELOG.md', () => {
  const chart = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string };
  const changelog = readFileSync(join(CHART_DIR, 'CHANGELOG.md'), 'utf8');
  const releases = [...changelog.matchAll(/^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$/gm)].map((m) => ({ version: m[1]!, date: m[2]! }));

  test('the newest release entry is the Chart.yaml version', () => {
    expect(releases[0]?.version).toBe(chart.version);
  });

  test('an Unreleased section first, then releases newest first with their dates, each version once', () => {
    expect(changelog.indexOf('## [Unreleased]')).toBeGreaterThan(0);
    expect(changelog.indexOf('## [Unreleased]')).toBeLessThan(changelog.indexOf(`## [${chart.version}]`));
    for (let i = 1; i < releases.length; i++) {
      expect({
        newer: releases[i - 1]!.version,
        older: releases[i]!.version,
        ordered: compareVersions(releases[i - 1]!.version, releases[i]!.version) > 0 && releases[i - 1]!.date >= releases[i]!.date,
      }).toEqual({
        newer: releases[i - 1]!.version,
        older: releases[i]!.version,
        ordered: true,
      });
    }
  });
});
