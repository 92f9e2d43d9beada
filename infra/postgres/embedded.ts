// Embedded PostgreSQL for `npm start` without DATABASE_URL (DESIGN.md §4): PGlite (real Postgres in WASM, UTF-8,
// C.UTF-8, with pg_trgm and btree_gin) persisted under .data/, served on a loopback port by pglite-socket so that the rest of
// the system talks to it through `pg` exactly as to a server. PGlite is single-connection: use one pool of size 1.
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { freePort } from '../temporal/devServer.js';

export interface EmbeddedPostgres {
  url: string;
  /** PGlite serves one connection at a time: pools must use at most this many. */
  maxConnections: 1;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(options: { dataDir: string; port?: number }): Promise<EmbeddedPostgres> {
  mkdirSync(options.dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir: options.dataDir, extensions: { pg_trgm, btree_gin } });
  // The tenant role must exist before migrations grant to it (ensure.sh does this for a real server).
  await db.exec(`DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dc_tenant') THEN CREATE ROLE dc_tenant NOLOGIN; END IF;
  END $$`);
  const port = options.port || (await freePort());
  const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1' });
  await server.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    maxConnections: 1,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}
