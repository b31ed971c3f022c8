/**
 * Which SQL files the shipped build must embed (deploy/build-main.mjs) and which it must
 * leave out: the baselines, the migrations after them and the repeatable files are what
 * migrate reads; the landed migrations a baseline replaces are history it never reads.
 * Repository-relative paths.
 */
import { relative } from 'node:path';
import { currentBaselines, currentFunctionFiles, currentMigrations } from '../../tools/migration-manifest';
import { ROOT } from './process';

export function shippedSql(): { embedded: string[]; history: string[] } {
  const baselines = currentBaselines();
  const replaced = new Set(baselines.flatMap((b) => [...b.replaces.keys()]));
  const migrations = currentMigrations();
  const rel = (f: { file: string }) => relative(ROOT, f.file);
  return {
    embedded: [...baselines, ...migrations.filter((m) => !replaced.has(m.id)), ...currentFunctionFiles()].map(rel),
    history: migrations.filter((m) => replaced.has(m.id)).map(rel),
  };
}
