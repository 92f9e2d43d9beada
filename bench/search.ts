// Search benchmark (`npm run bench:search -- --messages 100000`): a seeded corpus over many tenants of skewed sizes
// is loaded into a fresh PostgreSQL database (the project's schema, bulk insert bypassing the workflow) and into the
// SQLite FTS5 baseline (bench/searchBaseline.ts); the same queries run against both, per tenant, LIMIT 20, in one
// process. Prints p50/p95/p99 per path (Latin, CJK ≥ 3 characters, CJK 1–2 characters, no hit), the p95 ratio to the
// baseline, and the agreement of the result sets. The database and the SQLite file are removed at exit.
//
// Options: --messages N (default 100000), --tenants N (200), --queries N per path (200), --repeat N runs per query
//          (3, the median counts), --seed N (42), --keep (keep the database and the SQLite file), --reuse NAME (run the
//          queries on a kept corpus, same options), --probe-rows N (searchTuning.recencyProbeRows; 0 = off).
import { randomBytes } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import type { Database } from '../infra/db/schema.js';
import { searchMessages, searchTuning } from '../infra/db/search/index.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { SqliteBaseline } from './searchBaseline.js';
import {
  type BenchQuery,
  benchQueries,
  type CorpusRow,
  type CorpusSession,
  createRandom,
  generateCorpus,
  type QueryPath,
  tenantSpecs,
} from './searchCorpus.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

const MESSAGES = option('messages', 100_000);
const TENANTS = option('tenants', 200);
const QUERIES = option('queries', 200);
const REPEAT = option('repeat', 3);
const SEED = option('seed', 42);
const KEEP = process.argv.includes('--keep');
const REUSE = (() => {
  const i = process.argv.indexOf('--reuse');
  return i >= 0 ? process.argv[i + 1] : undefined;
})();
const PROBE_ROWS = (() => {
  const i = process.argv.indexOf('--probe-rows');
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
})();
const BATCH = 2000;
/** Issue #11 §6: every path's p95 within 1.5× the in-process SQLite baseline, at 100k and at 1M messages. */
const P95_RATIO_GOAL = 1.5;
const LIMIT = 20;

const log = (line: string) => process.stderr.write(`${line}\n`);

async function admin(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function insertSessions(db: Kysely<Database>, sessions: CorpusSession[]): Promise<void> {
  if (sessions.length > 0) {
    const records = sessions.map((s) => ({ ...s, startedAt: new Date(s.startedAt).toISOString() }));
    await sql`
      INSERT INTO sessions (tenant_id, id, conversation_id, source, model, started_at)
      SELECT r."tenantId", r.id, r.id, r.source, r.model, r."startedAt"
        FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb)
             AS r("tenantId" text, id text, source text, model text, "startedAt" timestamptz)`.execute(db);
  }
}

async function insertRows(db: Kysely<Database>, rows: CorpusRow[]): Promise<void> {
  const records = rows.map((r) => ({
    id: r.id,
    tenant_id: r.tenantId,
    session_id: r.sessionId,
    // The corpus gives every session a conversation of its own id.
    conversation_id: r.sessionId,
    role: r.message.role,
    content: typeof r.message.content === 'string' ? r.message.content : undefined,
    tool_calls: r.message.tool_calls,
    tool_call_id: r.message.tool_call_id,
    tool_name: r.message.role === 'tool' ? r.message.name : undefined,
    timestamp: new Date(r.timestamp).toISOString(),
    active: r.active,
    compacted: r.compacted,
    position: r.position,
  }));
  // The message and its row state (migrations/0008), in one statement.
  await sql`
    WITH r AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(
             id bigint, tenant_id text, session_id text, conversation_id text, role text, content text,
             tool_calls jsonb, tool_call_id text, tool_name text, "timestamp" timestamptz, active boolean,
             compacted boolean, position integer)),
    text_rows AS (
      INSERT INTO messages (id, tenant_id, session_id, conversation_id, role, content, tool_calls, tool_call_id,
                            tool_name, "timestamp")
      OVERRIDING SYSTEM VALUE
      SELECT r.id, r.tenant_id, r.session_id, r.conversation_id, r.role, r.content, r.tool_calls, r.tool_call_id,
             r.tool_name, r."timestamp"
        FROM r)
    INSERT INTO message_state (tenant_id, message_id, session_id, active, compacted, position)
    SELECT r.tenant_id, r.id, r.session_id, r.active, r.compacted, r.position FROM r`.execute(db);
}

async function loadFresh(db: Kysely<Database>, baseline: SqliteBaseline) {
  await migrateToLatest(db);
  log(`loading ${MESSAGES.toLocaleString('en')} messages over ${TENANTS} tenants (seed ${SEED})`);
  return load(db, baseline);
}

/** A kept corpus (same --messages, --tenants and --seed): the generator state is replayed without loading. */
async function reuse(db: Kysely<Database>) {
  const random = createRandom(SEED);
  const specs = tenantSpecs(random, TENANTS, MESSAGES);
  let rowCount = 0;
  for (const item of generateCorpus(random, specs)) if (item.kind === 'row') rowCount++;
  const stored = await sql<{ n: string }>`SELECT count(*) AS n FROM messages`.execute(db);
  if (Number(stored.rows[0]?.n) !== rowCount) throw new Error('--reuse: the kept corpus differs from these options');
  return { specs, random, rowCount, insertMs: 0, pgIndexMs: 0, sqliteMs: 0, sqliteIndexMs: 0 };
}

const SEARCH_INDEXES = ['messages_search_tsv', 'messages_search_trgm', 'messages_search_cjk'];

/**
 * Loads the corpus into both stores. Bulk load as usual for PostgreSQL: the GIN search indexes are dropped and
 * rebuilt afterwards from their migration definitions (read back from pg_indexes); two batches are in flight on the
 * two connections while the next one is generated.
 */
async function load(db: Kysely<Database>, baseline: SqliteBaseline) {
  const random = createRandom(SEED);
  const specs = tenantSpecs(random, TENANTS, MESSAGES);
  await sql`INSERT INTO tenants (id, name) SELECT unnest(${specs.map((s) => s.id)}::text[]), 'bench'`.execute(db);
  const definitions = await sql<{ indexdef: string }>`
    SELECT indexdef FROM pg_indexes WHERE indexname = ANY(${SEARCH_INDEXES}::text[])`.execute(db);
  for (const name of SEARCH_INDEXES) await sql`DROP INDEX ${sql.id(name)}`.execute(db);
  let sqliteMs = 0;
  let loaded = 0;
  const inFlight: Array<Promise<void>> = [];
  let sessions: CorpusSession[] = [];
  let rows: CorpusRow[] = [];
  const started = performance.now();
  const flush = async () => {
    const [s, r] = [sessions, rows];
    sessions = [];
    rows = [];
    const t = performance.now();
    baseline.load(s, r);
    sqliteMs += performance.now() - t;
    // Sessions first (committed before their rows are sent), then the rows, with at most two batches in flight.
    await insertSessions(db, s);
    if (inFlight.length >= 2) await inFlight.shift();
    inFlight.push(insertRows(db, r));
    loaded += r.length;
    if (Math.floor(loaded / 100_000) > Math.floor((loaded - r.length) / 100_000)) {
      const rate = Math.round(loaded / ((performance.now() - started) / 1000));
      log(`  loaded ${loaded.toLocaleString('en')} / ${MESSAGES.toLocaleString('en')} rows (${rate}/s)`);
    }
  };
  for (const item of generateCorpus(random, specs)) {
    if (item.kind === 'session') sessions.push(item.session);
    else rows.push(item.row);
    if (rows.length >= BATCH) await flush();
  }
  await flush();
  await Promise.all(inFlight);
  const insertMs = performance.now() - started - sqliteMs;
  log('  building the search indexes');
  let t = performance.now();
  await db.connection().execute(async (conn) => {
    await sql`SET maintenance_work_mem = '1GB'`.execute(conn);
    for (const { indexdef } of definitions.rows) await sql.raw(indexdef).execute(conn);
    await sql`VACUUM ANALYZE`.execute(conn);
  });
  const pgIndexMs = performance.now() - t;
  t = performance.now();
  baseline.buildIndexes();
  const sqliteIndexMs = performance.now() - t;
  return { specs, random, rowCount: loaded, insertMs, pgIndexMs, sqliteMs, sqliteIndexMs };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

const jaccard = (a: readonly number[], b: readonly number[]) => {
  const sa = new Set(a);
  const sb = new Set(b);
  const inter = [...sa].filter((x) => sb.has(x)).length;
  const union = new Set([...sa, ...sb]).size;
  return union === 0 ? 1 : inter / union;
};

/** Every match of ours, paging through searchMessages (at most `cap` rows). */
async function allOurs(db: Kysely<Database>, q: BenchQuery, cap: number): Promise<number[]> {
  const ids: number[] = [];
  for (let offset = 0; offset < cap; offset += 100) {
    const page = await searchMessages(db, q.tenantId, q.query, { limit: 100, offset });
    ids.push(...page.map((r) => r.id));
    if (page.length < 100) break;
  }
  return ids;
}

interface PathStats {
  ours: number[];
  base: number[];
  top20: number[];
  full: number[];
  identicalTop: number;
  complete: number;
  compared: number;
}

async function run(): Promise<void> {
  const adminUrl = await resolveDatabaseUrl();
  const name = REUSE ?? `dc_bench_${randomBytes(4).toString('hex')}`;
  const sqliteFile = join(tmpdir(), `${name}.sqlite`);
  if (PROBE_ROWS !== undefined) searchTuning.recencyProbeRows = PROBE_ROWS;
  if (!REUSE) {
    await admin(
      adminUrl,
      `CREATE DATABASE ${name} ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8' TEMPLATE template0`,
    );
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = createDb({ connectionString: url.toString(), maxConnections: 2, applicationName: 'bench-search' });
  const baseline = new SqliteBaseline(sqliteFile, REUSE !== undefined);
  const cleanup = async () => {
    baseline.close();
    await db.destroy();
    if (KEEP) {
      log(`kept ${url} and ${sqliteFile} (rerun with --reuse ${name})`);
      return;
    }
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${sqliteFile}${suffix}`, { force: true });
    await admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  process.once('SIGINT', () => {
    void cleanup().finally(() => process.exit(130));
  });
  try {
    const loaded = REUSE ? await reuse(db) : await loadFresh(db, baseline);
    const sizes = loaded.specs.map((s) => s.messages).sort((a, b) => b - a);
    const pgSize = await sql<{
      size: string;
    }>`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`.execute(db);
    const sqliteSize = statSync(sqliteFile).size / 1024 / 1024;
    console.log(
      `corpus: ${loaded.rowCount.toLocaleString('en')} messages, ${TENANTS} tenants (largest ${sizes[0]}, median ${sizes[Math.floor(sizes.length / 2)]}, smallest ${sizes.at(-1)})`,
    );
    const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      `load:   PostgreSQL ${sec(loaded.insertMs)} insert + ${sec(loaded.pgIndexMs)} index build/analyze (${pgSize.rows[0]?.size}); ` +
        `SQLite baseline ${sec(loaded.sqliteMs)} insert + ${sec(loaded.sqliteIndexMs)} FTS5 build (${sqliteSize.toFixed(0)} MB)`,
    );

    const queries = benchQueries(loaded.random, loaded.specs, QUERIES);
    log(`warming up with ${queries.length} queries`);
    for (const q of queries) {
      await searchMessages(db, q.tenantId, q.query, { limit: LIMIT });
      baseline.search(q.tenantId, q.query, LIMIT);
    }
    log('timing');
    const paths: QueryPath[] = ['latin', 'cjk3', 'cjk12', 'nohit'];
    const stats = new Map<QueryPath, PathStats>(
      paths.map((p) => [p, { ours: [], base: [], top20: [], full: [], identicalTop: 0, complete: 0, compared: 0 }]),
    );
    for (const q of queries) {
      const s = stats.get(q.path) as PathStats;
      // Each query REPEAT times, ours and the baseline alternating; its latency is the median (machine noise).
      const oursTimes: number[] = [];
      const baseTimes: number[] = [];
      let ours: Awaited<ReturnType<typeof searchMessages>> = [];
      let base: ReturnType<SqliteBaseline['search']> = [];
      for (let r = 0; r < REPEAT; r++) {
        let t = performance.now();
        ours = await searchMessages(db, q.tenantId, q.query, { limit: LIMIT });
        oursTimes.push(performance.now() - t);
        t = performance.now();
        base = baseline.search(q.tenantId, q.query, LIMIT);
        baseTimes.push(performance.now() - t);
      }
      s.ours.push(median(oursTimes));
      s.base.push(median(baseTimes));
      const oursIds = ours.map((r) => r.id);
      const baseIds = base.map((r) => r.id);
      s.top20.push(jaccard(oursIds, baseIds));
      if (oursIds.join() === baseIds.join()) s.identicalTop++;
      // Full match sets where they are small enough to page through.
      const baseAll = baseline.matchIds(q.tenantId, q.query);
      if (baseAll.length <= 2000) {
        const oursAll = await allOurs(db, q, 2100);
        s.full.push(jaccard(oursAll, baseAll));
        const mine = new Set(oursAll);
        if (baseAll.every((id) => mine.has(id))) s.complete++;
        s.compared++;
      }
    }

    const fmt = (v: number) => v.toFixed(1).padStart(7);
    const mean = (v: readonly number[]) => (v.length === 0 ? Number.NaN : v.reduce((a, b) => a + b, 0) / v.length);
    console.log('');
    console.log(
      `per-query latency in ms (median of ${REPEAT} runs), LIMIT ${LIMIT}, ${QUERIES} queries per path, one tenant per query`,
    );
    console.log(
      'path        |    ours p50     p95     p99 | baseline p50     p95     p99 | p95 ratio (goal) | top-20 same  J(top20)  J(all)  complete',
    );
    for (const p of paths) {
      const s = stats.get(p) as PathStats;
      const o = [...s.ours].sort((a, b) => a - b);
      const b = [...s.base].sort((a, b2) => a - b2);
      const ratio = percentile(o, 95) / percentile(b, 95);
      console.log(
        `${p.padEnd(11)} | ${fmt(percentile(o, 50))} ${fmt(percentile(o, 95))} ${fmt(percentile(o, 99))} |     ${fmt(
          percentile(b, 50),
        )} ${fmt(percentile(b, 95))} ${fmt(percentile(b, 99))} | ${ratio.toFixed(2).padStart(8)}x ${ratio <= P95_RATIO_GOAL ? 'met   ' : 'missed'} | ${`${s.identicalTop}/${s.ours.length}`.padStart(11)}  ${mean(
          s.top20,
        )
          .toFixed(3)
          .padStart(8)}  ${mean(s.full).toFixed(3).padStart(6)}  ${`${s.complete}/${s.compared}`.padStart(8)}`,
      );
    }
    console.log('');
    console.log(`goal: p95 ratio <= ${P95_RATIO_GOAL}x on every path (issue #11 §6)`);
    console.log('J = Jaccard of result ids; "all" = every match (queries with <= 2,000 baseline matches);');
    console.log(
      'complete = queries where ours contains every baseline match. Latin ranks differ (ts_rank_cd vs bm25),',
    );
    console.log('so only the CJK paths (recency order, same substring semantics) are expected to agree row for row.');
  } finally {
    await cleanup();
  }
}

await run();
