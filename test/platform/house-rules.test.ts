/**
 * House rules a reviewer would otherwise have to remember: code, comments and docs
 * describe the code and point only at files in the repository. A newcomer has the
 * repository and nothing else, so a reference to a tracker item, a work session, a
 * design note or an absolute path of some machine is a dead end.
 *
 * Checked in every text file of the tree (generated code and landed migrations
 * excepted: the first is rewritten by its generator, the second is frozen by
 * services/migrations.manifest.json and its checksums):
 * - no tracker references: "issue" followed by a number, a bare "#" and a number,
 *   the tracker's command line;
 * - no history of the work itself (which work session changed what);
 * - no absolute path or path into the folder beside the repository;
 * - every `*.md` file a text names exists in the repository.
 * Relative links in README.md and docs/ are resolved by test/platform/readme-links.test.ts.
 *
 * And one rule of size: no production TypeScript file (services, gateway, bin, the
 * workspace packages' sources, main.ts; tests and generated code aside) is longer than
 * MAX_PRODUCTION_LINES lines, so a file stays one concept a reader can hold.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ROOT } from '../support/process';

/** Folders that hold generated or installed files, never read. */
const SKIP_DIRS = new Set(['node_modules', 'dist', 'gen', 'generated', 'coverage', '.git', '.tmp', '.data']);
/** Text files by extension (and a few known names without one). */
const TEXT = /\.(ts|mts|cts|js|cjs|mjs|sql|proto|ya?ml|json|md|tpl|txt|sh)$|(^|\/)(Dockerfile|psync|run)$/;
/** The folders and files a reader of the repository meets. */
const SCOPE = ['services', 'gateway', 'bin', 'test', 'bench', 'deploy', 'helm', 'docs', 'examples', 'packages', 'proto', '.ci', 'README.md', 'main.ts'];

function filesBelow(path: string, out: string[] = []): string[] {
  const abs = join(ROOT, path);
  if (!existsSync(abs)) return out;
  if (statSync(abs).isDirectory()) {
    for (const name of readdirSync(abs).sort()) if (!SKIP_DIRS.has(name)) filesBelow(join(path, name), out);
  } else if (TEXT.test(path)) {
    out.push(path);
  }
  return out;
}

/** Landed migrations (`services/<module>/migrations/<name>.sql`): their text may never change. */
function landedMigrations(): Set<string> {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'services/migrations.manifest.json'), 'utf8')) as { migrations: Record<string, string> };
  return new Set(
    Object.keys(manifest.migrations).map((key) => {
      const [module, name] = key.split('/') as [string, string];
      return `services/${module}/migrations/${name}.sql`;
    }),
  );
}

/** Every Markdown file of the repository, by base name (a text may name `decisions.md` or `docs/decisions.md`). */
function markdownNames(files: string[]): Set<string> {
  return new Set(files.filter((f) => f.endsWith('.md')).flatMap((f) => [f, basename(f)]));
}

/** What a line may not say, each with the reason shown on failure. */
const RULES: { pattern: RegExp; why: string }[] = [
  { pattern: /\bissues? \d+/i, why: 'cites a tracker item; say what the code does and why' },
  { pattern: /\bissues show\b/, why: "cites the tracker's command line" },
  { pattern: /(^|[\s([,;])#\d{1,3}\b/, why: 'cites a tracker item by number' },
  {
    pattern: /\b(in|since|as of|fixed in|before) (the )?(session \d+|(first|second|third|fourth|fifth|previous|last|this) session)\b|\(session \d+\b|\bsame session\b/i,
    why: 'tells the history of the work',
  },
  { pattern: /(^|[\s"'`(])\/work\/|\bshared\/design\b|(\.\.\/)+shared\//, why: 'points outside the repository' },
];

/** Problems of one file's text: `line: rule (text)`. */
export function problemsOf(text: string, markdown: Set<string>, checkMarkdownNames = true): string[] {
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    const withoutUrls = line.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '');
    for (const rule of RULES) if (rule.pattern.test(withoutUrls)) problems.push(`${i + 1}: ${rule.why} (${line.trim().slice(0, 120)})`);
    if (!checkMarkdownNames) return;
    for (const m of withoutUrls.matchAll(/(?:^|[^\w./-])((?:\.{1,2}\/)*[\w./-]*?[\w-]+\.md)\b/g)) {
      const name = m[1]!.replace(/^(\.{1,2}\/)+/, '');
      if (!markdown.has(name) && !markdown.has(basename(name))) problems.push(`${i + 1}: names ${name}, which is not in the repository (${line.trim().slice(0, 120)})`);
    }
  });
  return problems;
}

/** Files whose text holds sample Markdown names on purpose (link-checker fixtures). */
const SAMPLE_NAMES = new Set(['test/platform/readme-links.test.ts', 'test/platform/house-rules.test.ts']);

describe('house rules: references point into the repository', () => {
  const landed = landedMigrations();
  const files = SCOPE.flatMap((p) => filesBelow(p)).filter((f) => !landed.has(f));
  const markdown = markdownNames(files);

  test('the scan sees the tree (sources, tests, docs and the chart)', () => {
    for (const f of ['main.ts', 'gateway/server.ts', 'README.md', 'docs/decisions.md', 'helm/psync/Chart.yaml', 'deploy/Dockerfile', '.ci/run']) expect(files).toContain(f);
    expect(files.some((f) => f.startsWith('gen/') || f.includes('/node_modules/'))).toBe(false);
  });

  test.each(files)('%s', (file) => {
    expect(problemsOf(readFileSync(join(ROOT, file), 'utf8'), markdown, !SAMPLE_NAMES.has(file))).toEqual([]);
  });

  test('the rules catch what they are for, and leave ordinary text alone', () => {
    const md = new Set(['docs/decisions.md', 'decisions.md']);
    const bad = [
      'see issue ' + '12 item 3',
      'Issue ' + '7 (internal trust boundary)',
      'closed in (#' + '14)',
      'run `issues' + ' show 15`',
      '(fixed in session ' + '2)',
      'as of the third ' + 'session',
      'the notes in /' + 'work/shared/notes',
      'see ../../' + 'shared/notes',
      'stack-notes' + '.md says so',
    ];
    for (const line of bad) expect(problemsOf(line, md)).toHaveLength(1);
    const fine = [
      'porsager/postgres#1154 and https://github.com/porsager/postgres/issues/1208',
      "background: '#000'",
      'session 1 holds an uncommitted row; an HTTP/2 session; TLS session resumption',
      'docs/decisions.md "Errors have one path" and ../docs/decisions.md',
      'no issues here',
    ];
    for (const line of fine) expect(problemsOf(line, md)).toEqual([]);
  });
});

/** The most lines a production TypeScript file may have (counted as `wc -l` does). */
const MAX_PRODUCTION_LINES = 450;
/** Where production TypeScript lives; tests (`*.test.ts`, a package's `test/` folder) and generated code aside. */
const PRODUCTION_SCOPE = ['services', 'gateway', 'bin', 'packages', 'main.ts'];
/** Lines of `text` as `wc -l` counts them (a last line without a newline counts too). */
export function lineCount(text: string): number {
  const newlines = text.split('\n').length - 1;
  return text === '' || text.endsWith('\n') ? newlines : newlines + 1;
}

/** `file (N lines)` for each production file over the limit and not allowed. */
export function oversized(files: { path: string; lines: number }[]): string[] {
  return files.filter((f) => f.lines > MAX_PRODUCTION_LINES).map((f) => `${f.path} (${f.lines} lines)`);
}

describe(`house rules: no production file over ${MAX_PRODUCTION_LINES} lines`, () => {
  const production = PRODUCTION_SCOPE.flatMap((p) => filesBelow(p))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.split('/').includes('test'))
    .map((path) => ({ path, lines: lineCount(readFileSync(join(ROOT, path), 'utf8')) }));

  test('the scan sees the production code, and no test or generated file', () => {
    for (const f of ['main.ts', 'gateway/server.ts', 'services/kit/runtime/config.ts', 'bin/cli/main.ts', 'packages/partner-sdk/src/client.ts'])
      expect(production.map((p) => p.path)).toContain(f);
    expect(production.some((p) => p.path.endsWith('.test.ts') || /(^|\/)(gen|generated|test)\//.test(p.path))).toBe(false);
  });

  test('every production file is within the limit (split one along its seams, one concept per file)', () => {
    expect(oversized(production)).toEqual([]);
  });

  test('the rule names each offender with its length, and counts lines as wc -l does', () => {
    expect(lineCount('')).toBe(0);
    expect(lineCount('a\nb\n')).toBe(2);
    expect(lineCount('a\nb')).toBe(2);
    const files = [
      { path: 'services/kit/long.ts', lines: MAX_PRODUCTION_LINES + 1 },
      { path: 'services/kit/fits.ts', lines: MAX_PRODUCTION_LINES },
      { path: 'gateway/openapi.ts', lines: 5000 },
    ];
    expect(oversized(files)).toEqual([`services/kit/long.ts (${MAX_PRODUCTION_LINES + 1} lines)`, 'gateway/openapi.ts (5000 lines)']);
  });
});
