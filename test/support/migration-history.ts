/**
 * A migration folder as the history its baseline replaced: the landed files, which stay in
 * the tree (services/kit/db/migration-baseline.ts), copied to a temporary folder with no
 * baseline beside it. Migrating from it replays what a database of the release before the
 * baseline went through, and reads the folder the way that release's binary reads it
 * (one that knew no baselines): the tests that prove a baseline equals its history, the
 * upgrade tests that start a database part of the way through it, bench:domain-sql.
 */
import { cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { MigrationSource } from '../../services/kit/db';

/**
 * A copy of `source`'s landed migrations under `root` (up to the file named `last`, when
 * given), without its baseline; with its `functions/` folder when `functions` is true.
 */
export function historySource(root: string, source: MigrationSource, opts: { last?: string; functions?: boolean } = {}): MigrationSource {
  const dir = join(root, source.prefix, 'migrations');
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(source.dir).filter((n) => n.endsWith('.sql') && (opts.last === undefined || n <= opts.last))) {
    cpSync(join(source.dir, name), join(dir, name));
  }
  const functions = join(dirname(source.dir), 'functions');
  if (opts.functions && existsSync(functions)) cpSync(functions, join(root, source.prefix, 'functions'), { recursive: true });
  return { prefix: source.prefix, dir };
}
