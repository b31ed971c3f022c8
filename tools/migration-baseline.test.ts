/**
 * How a baseline is made from pg_dump's output (migration-baseline.ts): entries split
 * at their headers, the preamble and `\restrict` lines gone, the schema's qualifiers
 * removed and nothing else, and only what a baseline keeps. The whole cut is proven on a
 * database by test/kit/migration-baseline.test.ts. And the header, as migrate parses it.
 */
import { parseBaselineHeader } from '../services/kit/db';
import { baselineHeader, baselineText, dumpEntries, unqualified } from './migration-baseline';

const DUMP = [
  '--',
  '-- PostgreSQL database dump',
  '--',
  '',
  '\\restrict abc',
  "SELECT pg_catalog.set_config('search_path', '', false);",
  '',
  '--',
  '-- Name: cal; Type: SCHEMA; Schema: -; Owner: -',
  '--',
  '',
  'CREATE SCHEMA cal;',
  '',
  '--',
  '-- Name: max_nights(); Type: FUNCTION; Schema: cal; Owner: -',
  '--',
  '',
  'CREATE FUNCTION cal.max_nights() RETURNS integer',
  '    LANGUAGE sql IMMUTABLE',
  '    RETURN 730;',
  '',
  '--',
  '-- Name: put_block(text); Type: FUNCTION; Schema: cal; Owner: -',
  '--',
  '',
  'CREATE FUNCTION cal.put_block(p text) RETURNS void LANGUAGE sql AS $$ select 1 $$;',
  '',
  '--',
  '-- Name: blocks; Type: TABLE; Schema: cal; Owner: -',
  '--',
  '',
  'CREATE TABLE cal.blocks (',
  "    subject text DEFAULT 'psync.cal.events' NOT NULL,",
  '    n integer CHECK ((n <= cal.max_nights()))',
  ');',
  '',
  '--',
  '-- Name: outbox; Type: TABLE; Schema: cal; Owner: -',
  '--',
  '',
  'CREATE TABLE cal.outbox (seq bigint);',
  '',
  '--',
  '-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: cal; Owner: -',
  '--',
  '',
  'ALTER TABLE ONLY cal.schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (id);',
  '',
  '--',
  '-- PostgreSQL database dump complete',
  '--',
  '',
  '\\unrestrict abc',
  '',
].join('\n');

test('splits the dump into its entries, without the preamble, the closing comment or the \\restrict lines', () => {
  const entries = dumpEntries(DUMP);
  expect(entries.map((e) => `${e.type} ${e.name}`)).toEqual([
    'SCHEMA cal',
    'FUNCTION max_nights()',
    'FUNCTION put_block(text)',
    'TABLE blocks',
    'TABLE outbox',
    'CONSTRAINT schema_migrations schema_migrations_pkey',
  ]);
  expect(entries.at(-1)!.text).toBe('ALTER TABLE ONLY cal.schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (id);');
});

test('removes the schema qualifier, not a name that merely contains it', () => {
  expect(unqualified('x cal.blocks, psync.cal.events, \'cal.t\', local.y, "cal".z', 'cal')).toBe('x blocks, psync.cal.events, \'t\', local.y, "cal".z');
});

test('keeps the schema objects and the functions they call, leaves out the schema, the kit objects and the bookkeeping', () => {
  const text = baselineText({
    entries: dumpEntries(DUMP),
    schema: 'cal',
    called: new Set(['max_nights']),
    leaveOut: new Set(['TABLE outbox']),
    header: ['The header.'],
    extensions: ['create extension if not exists btree_gist with schema public;'],
  });
  expect(text).toBe(
    [
      '-- The header.',
      '',
      'create extension if not exists btree_gist with schema public;',
      '',
      'CREATE FUNCTION max_nights() RETURNS integer',
      '    LANGUAGE sql IMMUTABLE',
      '    RETURN 730;',
      '',
      'CREATE TABLE blocks (',
      "    subject text DEFAULT 'psync.cal.events' NOT NULL,",
      '    n integer CHECK ((n <= max_nights()))',
      ');',
      '',
    ].join('\n'),
  );
});

test('the header names the release and each replaced migration with its checksum, as migrate reads them back', () => {
  const replaces = [
    { id: 'cal/0001_a', checksum: 'a'.repeat(64) },
    { id: 'cal/0002_b', checksum: 'b'.repeat(64) },
  ];
  const text = baselineText({ entries: [], schema: 'cal', called: new Set(), leaveOut: new Set(), header: baselineHeader('cal', 'c'.repeat(40), replaces), extensions: [] });
  expect(text).toContain('-- release: cccccccccccccccccccccccccccccccccccccccc\n-- replaces: cal/0001_a aaaa');
  const parsed = parseBaselineHeader(text, 'cal/baseline.sql', 'cal');
  expect(parsed.release).toBe('c'.repeat(40));
  expect([...parsed.replaces]).toEqual(replaces.map((r) => [r.id, r.checksum]));
  expect(() => parseBaselineHeader(text, 'other/baseline.sql', 'other')).toThrow(/replaces cal\/0001_a, a migration of another folder than other's/);
});
