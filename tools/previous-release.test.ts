/**
 * deploy/previous-release names one commit of this clone's history; recording names HEAD
 * and keeps the file's explanation.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git, PREVIOUS_RELEASE_FILE, previousRelease, recordPreviousRelease, requireCommit } from './previous-release';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'psync-previous-release-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('the checked-in file names a commit of the history, not HEAD itself', () => {
  const commit = previousRelease();
  expect(() => requireCommit(commit)).not.toThrow();
  expect(git(['merge-base', '--is-ancestor', commit, 'HEAD'])).toBe('');
});

test('a file without exactly one full commit id is refused', () => {
  const file = join(dir, 'bad');
  writeFileSync(file, '# comment\n1baeb40\n');
  expect(() => previousRelease(file)).toThrow(/one full commit id/);
});

test('recording names HEAD and keeps the comment lines', () => {
  const file = join(dir, 'previous-release');
  copyFileSync(PREVIOUS_RELEASE_FILE, file);
  const head = recordPreviousRelease(file);
  expect(previousRelease(file)).toBe(head);
  expect(readFileSync(file, 'utf8')).toBe(`${readFileSync(PREVIOUS_RELEASE_FILE, 'utf8').split('\n')[0]}\n${head}\n`);
});

test('a commit missing from the clone says how to fetch it', () => {
  expect(() => requireCommit('0'.repeat(40))).toThrow(/git fetch --unshallow/);
});
