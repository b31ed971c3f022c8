/**
 * Tests wait for conditions, not for time (docs/architecture.md "How tests wait"): an
 * awaited fixed pause of more than 100 ms — `sleep(ms)`, `pause(ms)` or a promise around
 * `setTimeout` — is allowed only
 *  - in test/support/eventually.ts (the wait helpers themselves),
 *  - inside a loop (a poll that ends on a condition),
 *  - in test/topology/ (each fault's own timing is what those tests measure),
 *  - or with a `timing under test:` comment on its line or the line above, saying which
 *    real clock's timing the test checks (a token's lifetime, a database hold's expiry).
 * A negative window (something must NOT happen) is `holdsFor`, with a named duration.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../support/process';

const SLEEPERS = new Set(['sleep', 'pause', 'delay']);
const LIMIT_MS = 100;

/** The `ms` of `await new Promise((r) => setTimeout(r, ms))`, or undefined for any other await. */
function awaitedNewPromise(node: ts.AwaitExpression): ts.Expression | undefined {
  const e = node.expression;
  if (!ts.isNewExpression(e) || !ts.isIdentifier(e.expression) || e.expression.text !== 'Promise') return undefined;
  const executor = e.arguments?.[0];
  if (!executor || !(ts.isArrowFunction(executor) || ts.isFunctionExpression(executor))) return undefined;
  let found: ts.Expression | undefined;
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'setTimeout' && n.arguments.length === 2) {
      const [cb] = n.arguments;
      // Only a bare resolve: `setTimeout(r, ms)`; a timer that rejects or does work is not a pause.
      if (cb && ts.isIdentifier(cb)) found ??= n.arguments[1];
    }
    ts.forEachChild(n, visit);
  };
  visit(executor.body);
  return found;
}

function insideLoop(node: ts.Node): boolean {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n)) return false;
    if (ts.isForStatement(n) || ts.isForOfStatement(n) || ts.isForInStatement(n) || ts.isWhileStatement(n) || ts.isDoStatement(n)) return true;
  }
  return false;
}

export function fixedPauses(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = text.split('\n');
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isAwaitExpression(node)) {
      const call = node.expression;
      let delay: ts.Expression | undefined;
      if (ts.isCallExpression(call) && ts.isIdentifier(call.expression) && SLEEPERS.has(call.expression.text)) delay = call.arguments[0];
      else delay = awaitedNewPromise(node);
      if (delay) {
        const small = ts.isNumericLiteral(delay) && Number(delay.text.replace(/_/g, '')) <= LIMIT_MS;
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const explained = /timing under test:/.test(lines[line] ?? '') || /timing under test:/.test(lines[line - 1] ?? '');
        if (!small && !insideLoop(node) && !explained) found.push(`${file}:${line + 1}: ${lines[line]!.trim()}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('no test waits a fixed time over 100 ms outside the wait helpers, a poll, the topology tests and the timing it checks', () => {
  // Test code: the test tree, and tests and their helpers beside the code.
  const files = execFileSync('git', ['ls-files', '*.ts', '*.tsx'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && !f.startsWith('test/topology/') && f !== 'test/support/eventually.ts')
    .filter((f) => f.startsWith('test/') || /\.test\.tsx?$/.test(f) || f.includes('/test/'));
  expect(files.length).toBeGreaterThan(100);
  const found = files.flatMap((f) => fixedPauses(f, readFileSync(join(ROOT, f), 'utf8')));
  expect(found).toEqual([]);
});

test('the check sees the shapes it is about', () => {
  const probe = [
    'async function t() {',
    '  await sleep(500);',
    '  await sleep(50);',
    '  await new Promise((r) => setTimeout(r, 1000));',
    '  // timing under test: a token expires',
    '  await sleep(2000);',
    '  while (x) await sleep(250);',
    '  await pause(QUIET_MS);',
    '}',
  ].join('\n');
  expect(fixedPauses('probe.ts', probe).map((l) => l.split(':')[1])).toEqual(['2', '4', '8']);
});
