/**
 * The migration lint is real: squawk, with the project's settings, flags the hazards a
 * rolling upgrade cannot take, accepts an exception only where the migration itself
 * says `-- squawk-ignore <rule>`, and the migrations added since the previous release
 * pass it (docs/operations.md "Upgrades").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { functionFilesChangedSince, lintMigrationFiles, migrationsAddedSince, notForFunctionFiles, routinesInMigrations } from './migration-lint';
import { filesAt, previousRelease } from './previous-release';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'psync-squawk-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Lints one migration with `sql` as its content; the rules it broke. */
function rulesBroken(name: string, sql: string): string[] {
  const file = join(dir, name);
  writeFileSync(file, sql);
  const { ok, report } = lintMigrationFiles([file], dir);
  const rules = [...report.matchAll(/: (?:warning|error): ([a-z-]+)/g)].map((m) => m[1]!);
  expect(ok).toBe(rules.length === 0);
  return rules;
}

describe('migration lint (squawk)', () => {
  test('flags a required column added without a default and an index built while writes wait', () => {
    const rules = rulesBroken(
      '0001_hazards.sql',
      ["set local lock_timeout = '5s';", 'alter table calendar.blocks add column note text not null;', 'create index blocks_note on calendar.blocks (note);', ''].join('\n'),
    );
    expect(rules).toEqual(expect.arrayContaining(['adding-required-field', 'require-concurrent-index-creation']));
  });

  test('flags a migration that would queue behind a long lock without a lock_timeout', () => {
    expect(rulesBroken('0002_no_timeout.sql', 'alter table calendar.blocks add column note text;\n')).toContain('require-lock-timeout');
  });

  test('passes the expand step of the policy: a nullable column under a lock_timeout', () => {
    expect(rulesBroken('0003_expand.sql', "set local lock_timeout = '5s';\nalter table calendar.blocks add column note text;\n")).toEqual([]);
  });

  test('accepts an exception only where the migration justifies it with squawk-ignore', () => {
    const sql = [
      "set local lock_timeout = '5s';",
      '-- The table holds one row per partner endpoint: building the index takes milliseconds.',
      '-- squawk-ignore require-concurrent-index-creation',
      'create index endpoints_status on notifications.endpoints (status);',
      'create index endpoints_url on notifications.endpoints (url);',
      '',
    ].join('\n');
    // Only the second index, which says nothing, is flagged.
    expect(rulesBroken('0004_justified.sql', sql)).toEqual(['require-concurrent-index-creation']);
  });

  test('the migrations added since the previous release pass', () => {
    const commit = previousRelease();
    const added = migrationsAddedSince(commit);
    const landed = filesAt(commit, 'services');
    expect(landed.size).toBeGreaterThan(0);
    for (const f of added) expect(landed.has(f)).toBe(false);
    const { ok, report } = lintMigrationFiles(added);
    expect(report).toBe('');
    expect(ok).toBe(true);
    expect(routinesInMigrations(added)).toEqual([]);
  });

  test('the repeatable SQL files new or changed since the previous release pass, without the lock_timeout rule', () => {
    const changed = functionFilesChangedSince(previousRelease());
    for (const f of changed) expect(f).toMatch(/^services\/[a-z]+\/functions\/[a-z0-9_]+\.sql$/);
    expect(notForFunctionFiles()).toEqual(['require-statement-timeout', 'require-lock-timeout']);
    expect(lintMigrationFiles(changed, undefined, notForFunctionFiles())).toEqual({ ok: true, report: '' });
  });

  test('a migration that defines a function, procedure or view is named: those live in functions/', () => {
    writeFileSync(
      join(dir, '0005_routine.sql'),
      "set local lock_timeout = '5s';\nalter table t add column c text;\nCREATE OR REPLACE FUNCTION calendar.f() returns int language sql return 1;\ncreate view v as select 1;\n",
    );
    writeFileSync(join(dir, '0006_schema.sql'), "set local lock_timeout = '5s';\n-- the function f is created in functions/f.sql\nalter table t add column d text;\n");
    expect(routinesInMigrations(['0005_routine.sql', '0006_schema.sql'], dir)).toEqual([
      { file: '0005_routine.sql', defines: ['CREATE OR REPLACE FUNCTION calendar.f', 'create view v'] },
    ]);
  });
});
