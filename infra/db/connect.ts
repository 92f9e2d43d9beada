// One pg pool per process, wrapped by kysely. Activities receive the Kysely instance by injection.
import { Kysely } from 'kysely';
import pg from 'pg';
import { PipelinedPostgresDialect } from './pipelinedTransactions.js';
import { PreparingClient } from './preparedStatements.js';
import type { Database } from './schema.js';

const INT8_OID = 20;

/** Connections of a process's read pool (status, transcript, search, authentication; workers/gateway.ts). */
export const READ_CONNECTIONS = 4;

export interface DbOptions {
  connectionString: string;
  maxConnections?: number;
  applicationName?: string;
}

export function createDb(options: DbOptions): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? 'durable-context',
    // Pipeline mode: a query is written to the socket without waiting for the answer to the one before, so a
    // transaction's BEGIN and tenant settings share the flight of its first statement (pipelinedTransactions.ts).
    // kysely still awaits each query it sends itself; pipeline mode refuses cursors and the `rows` option (unused).
    pipeline: true,
    // Statements run again and again are prepared once per connection (preparedStatements.ts), and still planned
    // for their values each time: a generic plan, which PostgreSQL may pick for a prepared statement, read one row
    // by id with a scan of the tenant's rows (3 ms instead of 0.05).
    Client: PreparingClient,
    options: '-c plan_cache_mode=force_custom_plan',
    // Row ids are identity bigints; they stay far below 2^53, so read them as numbers.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID
          ? (v: string) => Number.parseInt(v, 10)
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle pooled connection can be closed by the server (restart, failover, a dropped database); the pool then
  // discards it and opens a new one. Without a listener that 'error' event would crash the process.
  pool.on('error', (err) => {
    console.warn(`PostgreSQL pool: idle connection closed (${err.message})`);
  });
  // A connection that dies while checked out (e.g. between two statements of a transaction during a server restart)
  // emits 'error' on its client, which has no listener of its own then: without this, that crashes the process. The
  // statement in flight fails through its promise (an outage: 503), and the pool discards the broken client.
  pool.on('connect', (client) => {
    client.on('error', (err) => console.warn(`PostgreSQL connection lost (${err.message})`));
  });
  return new Kysely<Database>({ dialect: new PipelinedPostgresDialect({ pool }) });
}
