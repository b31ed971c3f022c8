/**
 * The four internal services by name: each is a role of main.ts, a PostgreSQL schema
 * and a `<NAME>_DATABASE_URL`. Its own file because the database layer and the service
 * modules both need it and neither may import the other for it.
 */
export type ServiceName = 'identity' | 'catalog' | 'calendar' | 'notifications';
