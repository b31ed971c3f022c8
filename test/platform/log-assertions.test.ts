/**
 * Tests find log lines by their stable `event` name and fields
 * (services/kit/base/log-events.ts, test/support/log-events.ts), never by message
 * text: messages are written for operators and may be reworded without breaking a test.
 *
 * A line of a test that reads a message (`l.msg === …`, `String(l.msg)`, a regex over
 * `msg`, a raw log line searched for words, the whole log joined into one text) fails
 * here. A check that must read the whole text on purpose (that no secret appears
 * anywhere in the logs) says so with the comment `log text on purpose: <why>` on that
 * line or the line before.
 *
 * And the list of event names is one list: each name in LOG_EVENTS is logged by the
 * production code and documented in docs/operations.md "Log events", and the table
 * names nothing else.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LOG_EVENTS } from '../../services/kit/base';
import { ROOT } from '../support/process';

const SKIP_DIRS = new Set(['node_modules', 'dist', 'gen', 'generated', 'coverage', '.git', '.tmp', '.data']);
/** This file holds the patterns as samples. */
const SELF = 'test/platform/log-assertions.test.ts';
const MARKER = 'log text on purpose:';

function filesBelow(path: string, keep: (p: string) => boolean, out: string[] = []): string[] {
  const abs = join(ROOT, path);
  if (!existsSync(abs)) return out;
  if (statSync(abs).isDirectory()) {
    for (const name of readdirSync(abs).sort()) if (!SKIP_DIRS.has(name)) filesBelow(join(path, name), keep, out);
  } else if (keep(path)) {
    out.push(path);
  }
  return out;
}

/** Test sources: the test tree, unit tests beside the code, the packages' tests and the tools'. */
function testFiles(): string[] {
  const isTs = (p: string) => /\.(ts|mts|cts)$/.test(p);
  const isTest = (p: string) => /\.test\.(ts|mts|cts)$/.test(p);
  return [
    ...filesBelow('test', isTs),
    ...['services', 'gateway', 'bin', 'tools'].flatMap((d) => filesBelow(d, isTest)),
    ...readdirSync(join(ROOT, 'packages')).flatMap((p) => filesBelow(join('packages', p, 'test'), isTs)),
  ].filter((f) => f !== SELF);
}

/** What a test line may not do, each with the reason shown on failure. */
const RULES: { pattern: RegExp; why: string }[] = [
  { pattern: /\bl\.msg\b|\.msg\s*[!=]==?/, why: 'compares a log message' },
  { pattern: /String\(\s*[\w.!?[\]]+\.msg\s*\)|typeof\s+[\w.!?[\]]+\.msg\b/, why: 'reads a log message as text' },
  { pattern: /\.msg\??\.(toString|startsWith|endsWith|includes|match|test)\(/, why: 'searches a log message' },
  { pattern: /\.test\([^()]*\.msg\)|=>\s*\w+\.msg\)/, why: 'matches or collects log messages' },
  { pattern: /expect\(.*\.msg\)\s*\.(not\.)?(toBe|toEqual|toContain|toMatch)\(/, why: 'asserts on a log message' },
  { pattern: /\bmsg:\s*(['"`/]|expect\.)/, why: 'expects a log message' },
  {
    pattern: /\.logs\(\)[^;]*\.(find|some|filter|every)\(\s*\(?\w+\)?\s*=>\s*\w+\.(includes|startsWith|endsWith)\(\s*['"`]"?[^'"`]*[A-Za-z]{2}/,
    why: 'searches raw log lines for words',
  },
  { pattern: /\.logs\(\)[^;]*\.join\(/, why: 'reads the whole log as one text' },
];
const HINT = 'find the line by its event (logEvents/firstLogEvent in test/support/log-events.ts) and assert on its fields';

/**
 * A method chain Prettier spread over lines (`system` / `.logs()` / `.filter(…)`) is
 * read as one line, numbered by its first.
 */
function logicalLines(text: string): { n: number; text: string; marked: boolean }[] {
  const out: { n: number; text: string; marked: boolean }[] = [];
  text.split('\n').forEach((line, i, all) => {
    const marked = line.includes(MARKER) || (i > 0 && all[i - 1]!.includes(MARKER));
    const last = out[out.length - 1];
    if (last && /^\s*\./.test(line)) {
      last.text += line.trim();
      last.marked ||= marked;
    } else out.push({ n: i + 1, text: line, marked });
  });
  return out;
}

/** Problems of one file's text: `line: rule (text)`. */
export function proseAssertions(text: string): string[] {
  const problems: string[] = [];
  for (const line of logicalLines(text)) {
    if (line.marked) continue;
    for (const rule of RULES) if (rule.pattern.test(line.text)) problems.push(`${line.n}: ${rule.why}; ${HINT} (${line.text.trim().slice(0, 140)})`);
  }
  return problems;
}

describe('tests assert on log events, never on message prose', () => {
  const files = testFiles();

  test('the scan sees the test tree, unit tests beside the code and the packages', () => {
    for (const f of ['test/support/system.ts', 'test/platform/start.test.ts', 'gateway/request-recorder.test.ts', 'services/kit/base/logger.test.ts']) expect(files).toContain(f);
    expect(files.some((f) => f.startsWith('packages/') && f.includes('/test/'))).toBe(true);
    expect(files.some((f) => f.includes('/node_modules/'))).toBe(false);
  });

  test('the rules catch reading a message, and leave events, fields and protobuf messages alone', () => {
    const caught = [
      "lines.filter((l) => l.msg === 'migration applied')",
      "logs.find((x) => x.msg === 'calendar: events past the retention pruned')",
      "lines.filter((l) => String(l.msg).startsWith('bus: stream configuration updated'))",
      "logs.find((line) => typeof line.msg === 'string' && line.msg.startsWith('database:'))",
      'lines.filter((w) => REPLAY.test(w.msg))',
      'jsonLogs(first.logs()).map((w) => w.msg)',
      'expect(lines.at(-1)?.msg).toMatch(/circuit closed/);',
      "expect(line).toMatchObject({ level: 'warn', msg: 'webhook delivered' });",
      "system.logs().find((line) => line.includes('request log: records refused'))",
      "expect(system.logs().join('\\n')).toContain('TOKEN_SIGNING_KEY is not set');",
      'system\n  .logs()\n  .slice(before)\n  .filter((l) => l.includes(\'"migration applied"\'))',
    ];
    expect(caught.filter((sample) => proseAssertions(sample).length === 0)).toEqual([]);
    const fine = [
      "logEvents(lines, 'migration.applied').map((l) => l.schema)",
      "firstLogEvent(system.logs(), 'rpc.server.bound')?.port",
      "expect(lines.at(-1)).toMatchObject({ level: 'warn', event: 'webhook.delivery.abandoned' });",
      'expect(events[0]!.msg).toMatchObject({ listing: { name: "x" } });',
      '.filter((x) => x && x.msg.listingId === listing)',
      'expect(res.stderr).toMatch(/not ?found/);',
      "const all = system.logs().join('\\n'); // log text on purpose: no secret anywhere in it",
    ];
    expect(fine.filter((sample) => proseAssertions(sample).length > 0)).toEqual([]);
  });

  test.each(files)('%s', (file) => {
    expect(proseAssertions(readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
  });
});

describe('log event names: one list, logged and documented', () => {
  const production = [...['services', 'gateway', 'bin'].flatMap((d) => filesBelow(d, (p) => p.endsWith('.ts') && !p.endsWith('.test.ts'))), 'main.ts'].map((f) =>
    readFileSync(join(ROOT, f), 'utf8'),
  );
  const logged = new Set(production.flatMap((text) => [...text.matchAll(/logEvent\('([a-z_.]+)'\)/g)].map((m) => m[1]!)));

  /** The event column of the table under the "Log events" heading of docs/operations.md. */
  function documented(): string[] {
    const text = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const start = text.indexOf('\n### Log events\n');
    if (start < 0) return [];
    const section = text.slice(start + 1).split(/\n#{2,3} /)[0]!;
    return [...section.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1]!);
  }

  test('every name is `<area>.<thing>…`, lower case, and appears once', () => {
    for (const e of LOG_EVENTS) expect(e).toMatch(/^[a-z][a-z_]*(\.[a-z][a-z_]*)+$/);
    expect(new Set(LOG_EVENTS).size).toBe(LOG_EVENTS.length);
  });

  test('every name is logged by the production code', () => {
    expect(LOG_EVENTS.filter((e) => !logged.has(e))).toEqual([]);
  });

  test('docs/operations.md "Log events" lists exactly these names', () => {
    expect(documented().sort()).toEqual([...LOG_EVENTS].sort());
  });
});
