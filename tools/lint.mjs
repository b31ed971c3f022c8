/**
 * `npm run lint`: ESLint (type-aware, the longest by far) beside the other checks —
 * Prettier, buf lint, buf breaking and the migration lint, run one after the other — so
 * the whole takes about as long as ESLint alone. The types are `npm run typecheck`. Each check's output is printed once it
 * ends, whole, in this order; the exit code is 1 when any check failed.
 */
import { spawn } from 'node:child_process';

const npmRun = (script) =>
  new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code) => resolve({ script, code, output }));
  });

async function inTurn(scripts) {
  const results = [];
  for (const s of scripts) {
    const r = await npmRun(s);
    results.push(r);
    if (r.code !== 0) break;
  }
  return results;
}

const [eslint, rest] = await Promise.all([npmRun('lint:ts'), inTurn(['format:check', 'lint:proto', 'lint:breaking', 'lint:migrations'])]);
let failed = false;
for (const r of [eslint, ...rest]) {
  process.stdout.write(`lint: ${r.script} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`}\n${r.output}`);
  failed ||= r.code !== 0;
}
process.exitCode = failed ? 1 : 0;
