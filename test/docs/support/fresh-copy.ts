/**
 * What a fresh clone of the repository holds, copied to a temporary directory: every
 * file git tracks or would track (`git ls-files --cached --others --exclude-standard`,
 * so work not yet committed is included and nothing ignored is: no node_modules, no
 * .data, no gen/). Modes are kept (bin/psync stays executable).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../../support/process';

export interface FreshCopy {
  dir: string;
  remove(): void;
}

export function freshCopy(prefix: string): FreshCopy {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 })
    .toString('utf8')
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(ROOT, f))); // a tracked file deleted in the working tree is not copied
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(dir, f));
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
