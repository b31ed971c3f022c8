/**
 * `npm run migrations:baseline`: cuts a baseline for every migration folder, the schema
 * and rows its landed migrations leave, which a new schema runs instead of them
 * (services/kit/db/migration-baseline.ts; docs/operations.md "Baselines"). The migration
 * files stay where they landed, as history: migrate and the shipped build no longer read
 * the ones a baseline replaces.
 *
 * It migrates an empty database (DATABASE_URL: a scratch database on a PostgreSQL server
 * whose major version pg_dump matches) from the tree, one schema per service plus one
 * holding the kit's migrations alone, and writes what `pg_dump --inserts` prints of
 * each schema as `baseline.sql` beside the folder, under a header naming the release it
 * was cut from and every migration it replaces with its manifest checksum, with:
 * - names left unqualified, as every migration is written (migrate.ts runs them with
 *   the schema first in `search_path`; the kit's baseline goes into every schema);
 * - the kit's objects left out of each service's baseline (the kit's baseline makes them);
 * - the bookkeeping tables of migrate.ts left out (it creates them itself);
 * - of the functions, only those a table, index, constraint or trigger of the schema
 *   calls (and those they call): PostgreSQL needs them before the object. Every other
 *   function is the service's `functions/` folder's, applied after the migrations.
 *
 * It refuses a folder holding a migration the previous release (deploy/previous-release)
 * does not have, or one whose file differs from the manifest: a baseline replaces landed
 * migrations only, so every database of that release holds what it replaces.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { baselinePathOf, createSql, loadBaseline, runMigrations, type MigrationSource, type Sql } from '../services/kit/db';
import { allMigrationSources, currentMigrations, readManifest } from './migration-manifest';
import { filesAt, previousRelease, REPOSITORY_ROOT, requireCommit } from './previous-release';

/** One entry of pg_dump's output: its table-of-contents header and its statements. */
interface DumpEntry {
  name: string;
  type: string;
  text: string;
}

/** pg_dump's header of each entry (`-- Name: x; Type: TABLE; Schema: s; Owner: -`, `-- Data for Name: …` for a table's rows). */
const ENTRY_HEADER = /^--\n-- (?:Data for )?Name: (.*?); Type: (.*?); Schema: .*\n--\n/gm;

/** Splits pg_dump's plain output into its entries, dropping the preamble and its `\restrict` lines. */
export function dumpEntries(dump: string): DumpEntry[] {
  const headers = [...dump.matchAll(ENTRY_HEADER)];
  return headers.map((h, i) => {
    const end = i + 1 < headers.length ? headers[i + 1]!.index : dump.length;
    const text = dump
      .slice(h.index + h[0].length, end)
      .split('\n')
      .filter((l) => !l.startsWith('\\') && !l.startsWith('--'))
      .join('\n')
      .trim();
    return { name: h[1]!, type: h[2]!, text };
  });
}

/** `text` with `schema.` qualifiers removed (not inside another name or a quoted identifier). */
export function unqualified(text: string, schema: string): string {
  return text.replace(new RegExp(`(?<![\\w."])${schema}\\.(?=[a-z_"])`, 'g'), '');
}

/** The tables migrate.ts keeps its record in: it creates them, a baseline does not. */
const BOOKKEEPING = new Set(['schema_migrations', 'schema_functions']);

/** Names of the functions of `schema` that its other objects call, and the functions those call. */
async function functionsCalledBySchema(sql: Sql, schema: string): Promise<Set<string>> {
  const rows = await sql<{ proname: string }[]>`
    with recursive called(oid) as (
      select d.refobjid from pg_depend d join pg_proc p on p.oid = d.refobjid
      where d.refclassid = 'pg_proc'::regclass and d.classid <> 'pg_proc'::regclass and p.pronamespace = ${schema}::regnamespace
      union
      select d.refobjid from pg_depend d join called c on d.classid = 'pg_proc'::regclass and d.objid = c.oid
      join pg_proc p on p.oid = d.refobjid
      where d.refclassid = 'pg_proc'::regclass and p.pronamespace = ${schema}::regnamespace
    )
    select distinct p.proname from called c join pg_proc p on p.oid = c.oid`;
  return new Set(rows.map((r) => r.proname));
}

/** `create extension` lines of `texts`, each extension once. */
function extensionLines(texts: string[]): string[] {
  const names = new Set(texts.flatMap((t) => [...t.matchAll(/^create extension if not exists (\w+) with schema public;$/gim)].map((m) => m[1]!.toLowerCase())));
  return [...names].sort().map((n) => `create extension if not exists ${n} with schema public;`);
}

/** The baseline text of `schema`: its pg_dump entries as the header of this file says, under a header of its own. */
export function baselineText(opts: { entries: DumpEntry[]; schema: string; called: Set<string>; leaveOut: Set<string>; header: string[]; extensions: string[] }): string {
  const kept = opts.entries.filter((e) => {
    if (e.type === 'SCHEMA' || BOOKKEEPING.has(e.name.split(' ')[0]!)) return false;
    // pg_dump writes a data entry for every table; an empty table's says nothing.
    if (e.type === 'TABLE DATA' && e.text === '') return false;
    if (opts.leaveOut.has(`${e.type} ${e.name}`)) return false;
    return e.type !== 'FUNCTION' || opts.called.has(e.name.slice(0, e.name.indexOf('(')));
  });
  const body = kept.map((e) => unqualified(e.text, opts.schema));
  return `${[...opts.header.map((l) => `-- ${l}`), '', ...opts.extensions.map((l) => `${l}\n`), ...body.map((b) => `${b}\n`)].join('\n').trimEnd()}\n`;
}

/** Throws when a folder holds a migration `commit` does not have, or one the manifest pins with other bytes. */
function requireLanded(commit: string): void {
  requireCommit(commit);
  const landed = filesAt(commit, 'services');
  const manifest = readManifest().migrations;
  const fresh = currentMigrations()
    .filter((m) => !landed.has(relative(REPOSITORY_ROOT, m.file)) || manifest[m.id] !== m.checksum)
    .map((m) => relative(REPOSITORY_ROOT, m.file));
  if (fresh.length > 0)
    throw new Error(`not landed as the manifest pins it in the previous release ${commit.slice(0, 12)}: ${fresh.join(', ')}; a baseline replaces landed migrations only`);
}

/** The header of a baseline: what it is, then the lines migrate reads (migration-baseline.ts). */
export function baselineHeader(prefix: string, release: string, replaces: Array<{ id: string; checksum: string }>): string[] {
  return [
    `The ${prefix} schema and the rows its landed migrations leave, for a new schema only:`,
    'migrate runs it in place of the migrations named below and records each with the',
    'checksum its file landed with; a schema holding them skips it. Those files stay in',
    'migrations/ as history (landed files never change), read only by the tests that prove',
    'this equals them. Cut by `npm run migrations:baseline` (docs/operations.md "Baselines");',
    'never edited by hand: a change is a new migration, and the next release cuts it again.',
    'Of the functions, only those a table, index, constraint or trigger calls are here:',
    'functions/ holds every other one and is applied after the migrations.',
    `release: ${release}`,
    ...replaces.map((r) => `replaces: ${r.id} ${r.checksum}`),
  ];
}

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL: an empty scratch database on a PostgreSQL server (createdb), which this run fills');
  const commit = previousRelease();
  requireLanded(commit);
  const sources = allMigrationSources();
  const files = currentMigrations();
  const schemaOf = (s: MigrationSource) => (s.prefix === 'kit' ? 'kit_baseline' : s.prefix);
  const sql = createSql(url, { max: 1 });
  try {
    const [used] = await sql<{ n: number }[]>`select count(*)::int as n from pg_namespace where nspname = any(${sources.map(schemaOf)})`;
    if (used!.n > 0) throw new Error(`${url.replace(/\/\/[^@]*@/, '//')}: not empty; cut a baseline on a fresh database (createdb)`);
    const kit = sources[0]!;
    let kitObjects = new Set<string>();
    for (const source of sources) {
      const schema = schemaOf(source);
      await runMigrations(sql, { schema, sources: source === kit ? [kit] : [kit, source] });
      const dump = execFileSync('pg_dump', ['--inserts', '--no-owner', '--no-privileges', `--schema=${schema}`, url], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      const entries = dumpEntries(dump);
      if (source === kit) kitObjects = new Set(entries.map((e) => `${e.type} ${e.name}`));
      const own = files.filter((f) => f.id.startsWith(`${source.prefix}/`));
      const out = baselinePathOf(source);
      const existing = loadBaseline(source);
      if (existing && own.every((f) => existing.replaces.has(f.id))) {
        process.stdout.write(`${relative(REPOSITORY_ROOT, out)}: replaces every migration of its folder already, left as it is\n`);
        continue;
      }
      const text = baselineText({
        entries,
        schema,
        called: await functionsCalledBySchema(sql, schema),
        leaveOut: source === kit ? new Set() : kitObjects,
        extensions: extensionLines(own.map((f) => f.content)),
        header: baselineHeader(source.prefix, commit, own),
      });
      writeFileSync(out, text);
      process.stdout.write(`${relative(REPOSITORY_ROOT, out)}: replaces ${own.map((f) => f.id).join(', ')}\n`);
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
  process.stdout.write('next: the baseline test (test/kit/migration-baseline.test.ts) on embedded and real PostgreSQL\n');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`migrations:baseline: ${(err as Error).message}\n`);
    process.exitCode = 1;
  });
}
