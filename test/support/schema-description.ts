/**
 * What a schema is made of, read from the catalog in a form two databases can be
 * compared by: tables and their columns (in order), types, sequences, constraints,
 * indexes, triggers, functions with their definitions, and the repeatable SQL files
 * migrate recorded, and the rows of its tables (the rows its migrations wrote: a new
 * schema holds nothing else). Not `schema_migrations` (it says how the schema came to
 * be, which is what may differ).
 */
import type { Sql } from '../../services/kit/db';

export interface SchemaDescription {
  relations: string[];
  columns: string[];
  types: string[];
  constraints: string[];
  indexes: string[];
  triggers: string[];
  functions: string[];
  functionFiles: string[];
  /** Each table's rows, as JSON in a stable order. */
  rows: string[];
}

const lines = (rows: { line: string }[]): string[] => rows.map((r) => r.line);

/** The description of `schema` in the database `sql` reaches. */
export async function describeSchema(sql: Sql, schema: string): Promise<SchemaDescription> {
  const relations = await sql<{ line: string }[]>`
    select concat_ws(' ', c.relname, c.relkind::text) as line from pg_class c
    where c.relnamespace = ${schema}::regnamespace order by 1`;
  const columns = await sql<{ line: string }[]>`
    select concat_ws(' ', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), case when a.attnotnull then 'not null' end,
      nullif(a.attidentity::text, ''), nullif(a.attgenerated::text, ''), pg_get_expr(d.adbin, d.adrelid),
      case when a.attcollation <> t.typcollation then a.attcollation::regcollation::text end) as line
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_type t on t.oid = a.atttypid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where c.relnamespace = ${schema}::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'c') and a.attnum > 0 and not a.attisdropped
    order by c.relname, a.attnum`;
  const types = await sql<{ line: string }[]>`
    select concat_ws(' ', t.typname, t.typtype::text) as line from pg_type t
    where t.typnamespace = ${schema}::regnamespace and t.typtype::text <> 'b' order by 1`;
  const constraints = await sql<{ line: string }[]>`
    select concat_ws(' ', c.conrelid::regclass::text, c.contypid::regtype::text, c.conname, pg_get_constraintdef(c.oid), case when not c.convalidated then 'not valid' end) as line
    from pg_constraint c where c.connamespace = ${schema}::regnamespace order by 1`;
  const indexes = await sql<{ line: string }[]>`
    select pg_get_indexdef(i.indexrelid) as line from pg_index i join pg_class c on c.oid = i.indexrelid
    where c.relnamespace = ${schema}::regnamespace order by 1`;
  const triggers = await sql<{ line: string }[]>`
    select pg_get_triggerdef(t.oid) as line from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = ${schema}::regnamespace and not t.tgisinternal order by 1`;
  const functions = await sql<{ line: string }[]>`
    select pg_get_functiondef(p.oid) as line from pg_proc p
    where p.pronamespace = ${schema}::regnamespace and p.prokind in ('f', 'p') order by p.oid::regprocedure::text`;
  const functionFiles = await sql<{ line: string }[]>`
    select id || ' ' || version || ' ' || checksum as line from ${sql(`${schema}.schema_functions`)} order by id`;
  const tables = await sql<{ relname: string }[]>`
    select c.relname from pg_class c
    where c.relnamespace = ${schema}::regnamespace and c.relkind in ('r', 'p') and c.relname not in ('schema_migrations', 'schema_functions')
    order by 1`;
  const rows: string[] = [];
  for (const { relname } of tables) {
    const [r] = await sql<{ j: string }[]>`select coalesce(json_agg(t order by t::text), '[]')::text as j from ${sql(`${schema}.${relname}`)} t`;
    rows.push(`${relname} ${r!.j}`);
  }
  return {
    relations: lines(relations),
    columns: lines(columns),
    types: lines(types),
    constraints: lines(constraints),
    indexes: lines(indexes),
    triggers: lines(triggers),
    functions: lines(functions),
    functionFiles: lines(functionFiles),
    rows,
  };
}
