/**
 * PostgreSQL: the postgres.js instance and its statement telemetry, the embedded PGlite
 * default, the per-service roles, and the migrations with their baselines and repeatable SQL files,
 * read from disk or from the shipped build (sql-tree.ts).
 *
 * This file is the module's whole public surface: code outside services/kit/db/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export {
  connectionLost,
  connectionsClosed,
  createSql,
  type Database,
  type DatabaseSettings,
  openDatabase,
  ownDatabaseUrl,
  SERVICE_NAMES,
  type Sql,
  type Tx,
  usesPostgresServer,
} from './database';
export { provisionServiceRoles, verifierMatches } from './database-roles';
export { startEmbeddedPostgres } from './embedded-postgres';
export { runMigrations } from './migrate';
export { KIT_MIGRATIONS, loadMigrations, migrationChecksum, type MigrationFile, type MigrationSource } from './migration-files';
export { type Baseline, baselinePathOf, loadBaseline, migrationPlan, parseBaselineHeader } from './migration-baseline';
export { parsePostgresUrl, type PostgresUrl, postgresUrlWithoutSecrets } from './postgres-url';
export { type FunctionFile, loadFunctionFiles } from './sql-functions';
export { operationName } from './sql-telemetry';
export { treePath } from './sql-tree';
