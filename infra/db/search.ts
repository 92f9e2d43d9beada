// Message search (SPEC §14): tenant-scoped, through the view tenant_messages (index-friendly under RLS, see
// migrations/0001) inside withTenant. Latin queries match search_tsv with a tsquery built by functions and rank by
// ts_rank_cd; CJK queries match substrings (ILIKE semantics) with the CJK gram column and index (migrations/0002)
// and the trigram index, newest first. Every predicate is evaluated on the row itself — an index only finds
// candidates — so the results never depend on an index or on which plan PostgreSQL picks.
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from './schema.js';
import {
  cjkGramsOf,
  escapeLike,
  isCjkChar,
  type ParsedQuery,
  parseSearchQuery,
  positiveTerms,
  type QueryClause,
  type SearchTerm,
} from './searchQuery.js';
import { cjkSnippet, latinSnippet } from './searchSnippet.js';
import { type TenantTx, withTenant } from './tenant.js';

export type SearchSort = 'relevance' | 'newest' | 'oldest';

export interface SearchOptions {
  /** Only sessions whose source is in the list (an empty list filters nothing). */
  sources?: readonly string[];
  /** Not sessions whose source is in the list. */
  excludeSources?: readonly string[];
  /** Only rows whose role is in the list (an empty list filters nothing). */
  roles?: readonly string[];
  /** Also superseded rows (`active = false, compacted = false`). Default false. */
  includeInactive?: boolean;
  /** Default `relevance`: rank on the Latin path, recency on the CJK path. */
  sort?: SearchSort;
  /** Default 20, clamped to [1, 100]. */
  limit?: number;
  /** Default 0; negative → 0. */
  offset?: number;
}

export interface SearchContextEntry {
  role: string;
  /** Text of the neighbour, cut to 200 characters (`[multimodal content]` for parts without text). */
  content: string;
}

/** SPEC §14.8. */
export interface SearchResult {
  id: number;
  session_id: string;
  role: string;
  snippet: string;
  /** ISO 8601 UTC. */
  timestamp: string;
  tool_name: string | null;
  source: string;
  model: string | null;
  /** ISO 8601 UTC. */
  session_started: string;
  /** The previous and then the next row of the session (a missing neighbour is omitted). */
  context: SearchContextEntry[];
}

export const DEFAULT_SEARCH_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 100;
const CONTEXT_CHARS = 200;

interface NormalisedOptions {
  sources: string[];
  excludeSources: string[];
  roles: string[];
  includeInactive: boolean;
  sort: SearchSort;
  limit: number;
  offset: number;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function integerOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : fallback;
}

export function normaliseSearchOptions(options: SearchOptions = {}): NormalisedOptions {
  const sort = options.sort === 'newest' || options.sort === 'oldest' ? options.sort : 'relevance';
  return {
    sources: stringList(options.sources),
    excludeSources: stringList(options.excludeSources),
    roles: stringList(options.roles),
    includeInactive: options.includeInactive === true,
    sort,
    limit: Math.min(MAX_SEARCH_LIMIT, Math.max(1, integerOr(options.limit, DEFAULT_SEARCH_LIMIT))),
    offset: Math.max(0, integerOr(options.offset, 0)),
  };
}

type Sql = RawBuilder<unknown>;

/** Joins in a balanced tree, so a query of a thousand terms does not nest a thousand deep. */
function balanced(parts: readonly Sql[], op: Sql): Sql {
  if (parts.length === 1) return parts[0] as Sql;
  const middle = Math.ceil(parts.length / 2);
  return sql`(${balanced(parts.slice(0, middle), op)} ${op} ${balanced(parts.slice(middle), op)})`;
}

function visibility(alias: string, includeInactive: boolean): Sql {
  return includeInactive ? sql`true` : sql`(${sql.ref(`${alias}.active`)} OR ${sql.ref(`${alias}.compacted`)})`;
}

/** Letters and digits: the words a Latin term contributes (dc_search_words keeps the same, as [[:alnum:]]). */
const WORD = /[\p{L}\p{N}]/u;

/**
 * One term's tsquery, built by functions from the term's words (SPEC §14.5): plainto_tsquery for a plain term,
 * phraseto_tsquery for a phrase, dc_prefix_tsquery (`:*` on the last word) for a prefix. User text is only ever a
 * function argument, never tsquery syntax. All of it is immutable, so PostgreSQL folds it to a constant when it plans
 * the query: the index condition and the row estimates see the real lexemes.
 */
function termTsquery(term: SearchTerm): Sql {
  const words = sql`dc_search_words(${term.text})`;
  const query = term.phrase ? sql`phraseto_tsquery('simple', ${words})` : sql`plainto_tsquery('simple', ${words})`;
  return term.prefix ? sql`dc_prefix_tsquery(${query})` : query;
}

/**
 * The Latin match as one tsquery expression, or null when no term has a word. Terms without a letter or digit yield
 * no lexeme and are dropped; a group left without a positive term is dropped (a lone negation would match nearly
 * everything). An empty tsquery operand that slips through is ignored by && and || in PostgreSQL as well.
 */
function latinTsquery(parsed: ParsedQuery): Sql | null {
  const groups: Sql[] = [];
  for (const group of parsed.groups) {
    const searchable = group.filter((clause) => WORD.test(clause.term.text));
    const positive = searchable.filter((c) => !c.negated).map((c) => termTsquery(c.term));
    if (positive.length === 0) continue;
    const negative = searchable.filter((c) => c.negated).map((c) => sql`(!! ${termTsquery(c.term)})`);
    groups.push(balanced([...positive, ...negative], sql`&&`));
  }
  return groups.length === 0 ? null : balanced(groups, sql`||`);
}

/** True when lower-casing cannot change the text, so ILIKE on it is plain substring search. */
function isUncased(text: string): boolean {
  return text.toLowerCase() === text && text.toUpperCase() === text;
}

/** A term of 1–2 CJK characters: matching it is exactly having its gram (see cjkClause). */
function isExactGram(clause: QueryClause): boolean {
  const chars = Array.from(clause.term.text);
  return chars.length <= 2 && chars.every(isCjkChar);
}

/**
 * One CJK-path clause, equivalent to `indexed_text ILIKE '%term%' ESCAPE '\'` (SPEC §14.6):
 * - a term of 1–2 CJK characters is exactly "its gram is in cjk_grams" (cjk_grams holds every unigram and bigram
 *   of the text's CJK runs): one GIN-indexed predicate whose frequency the planner knows from the column's element
 *   statistics, so it picks a recency-ordered scan for common terms and the gram index for rare ones;
 * - a longer term with CJK characters is prefiltered by all its grams (gram index), then rechecked on the row
 *   text: strpos when the term has no cased characters (ILIKE and substring search agree there), else ILIKE;
 * - a term without CJK characters is ILIKE (served by the trigram index from 3 characters on).
 * `strpos(…) <> 0` is estimated as non-selective by the planner, so the recheck does not skew the plan choice.
 */
function cjkClause(clause: QueryClause): Sql {
  const text = clause.term.text;
  const grams = cjkGramsOf(text);
  const ilike = sql`m.indexed_text ILIKE ${`%${escapeLike(text)}%`} ESCAPE '\\'`;
  if (isExactGram(clause)) {
    const hasGram = sql`m.cjk_grams @> ARRAY[${text}]::text[]`;
    return clause.negated ? sql`NOT (${hasGram})` : hasGram;
  }
  const recheck = isUncased(text) ? sql`strpos(m.indexed_text, ${text}) <> 0` : ilike;
  if (clause.negated) return sql`NOT (${recheck})`;
  return grams.length > 0 ? sql`(m.cjk_grams @> ${grams}::text[] AND ${recheck})` : ilike;
}

function cjkMatch(parsed: ParsedQuery): Sql {
  const groups = parsed.groups.map((group) => sql`(${sql.join(group.map(cjkClause), sql` AND `)})`);
  return groups.length === 1 ? (groups[0] as Sql) : sql`(${sql.join(groups, sql` OR `)})`;
}

/**
 * Tuning of recency-ordered searches: how many of the newest (or oldest) visible rows are checked first
 * (see hitsQuery); 0 turns the probe off. Changed only by benchmarks.
 */
export const searchTuning = { recencyProbeRows: 400 };

/** How hits are ordered: by rank (Latin relevance), or by recency. */
type Ordering = 'rank' | 'newest' | 'oldest';

function orderBy(alias: string, ordering: Ordering): Sql {
  const ts = sql.ref(`${alias}.timestamp`);
  const id = sql.ref(`${alias}.id`);
  if (ordering === 'oldest') return sql`${ts} ASC, ${id} ASC`;
  const recency = sql`${ts} DESC, ${id} DESC`;
  return ordering === 'rank' ? sql`${sql.ref(`${alias}.rank`)} DESC, ${recency}` : recency;
}

/**
 * The tenant (again: the view already restricts to app.tenant_id, which withTenant set to the same id; the constant
 * lets the planner use the tenant's own row count), visibility and the option filters, on the row `m`.
 */
function rowFilters(tenantId: string, options: NormalisedOptions): Sql {
  const filters: Sql[] = [sql`m.tenant_id = ${tenantId}`, visibility('m', options.includeInactive)];
  if (options.roles.length > 0) filters.push(sql`m.role = ANY(${options.roles}::text[])`);
  if (options.sources.length > 0 || options.excludeSources.length > 0) {
    const sourceFilters: Sql[] = [sql`s.tenant_id = m.tenant_id`, sql`s.id = m.session_id`];
    if (options.sources.length > 0) sourceFilters.push(sql`s.source = ANY(${options.sources}::text[])`);
    if (options.excludeSources.length > 0) sourceFilters.push(sql`s.source <> ALL(${options.excludeSources}::text[])`);
    filters.push(sql`EXISTS (SELECT 1 FROM sessions s WHERE ${sql.join(sourceFilters, sql` AND `)})`);
  }
  return sql.join(filters, sql` AND `);
}

/**
 * The hits (the first `offset + limit` rows in order) as one SQL query over the columns id, session_id, role,
 * timestamp, tool_name, rank.
 *
 * Recency-ordered searches first look only at the newest (oldest) `searchTuning.recencyProbeRows` visible rows, in index order:
 * when enough of them match, those are the answer, found without touching the older rows — the fast case for
 * common terms in large tenants, which an index lookup would have to fetch and sort in full. Otherwise the whole
 * search runs (indexes for rare terms). Both give the same rows; the probe only decides how fast. Skipped when
 * the planner can judge the term's frequency itself (SearchPlan.wellEstimated) and for rank order (needs all rows).
 */
function hitsQuery(tenantId: string, plan: SearchPlan, ordering: Ordering, options: NormalisedOptions): Sql {
  const wanted = options.offset + options.limit;
  const full = sql`
    SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, ${plan.rank} AS rank
      FROM tenant_messages m
     WHERE ${plan.match} AND ${rowFilters(tenantId, options)}
     ORDER BY ${ordering === 'rank' ? sql`rank DESC, m."timestamp" DESC, m.id DESC` : orderBy('m', ordering)}
     LIMIT ${wanted}`;
  const probeRows = searchTuning.recencyProbeRows;
  if (ordering === 'rank' || plan.wellEstimated || probeRows <= 0 || wanted > MAX_SEARCH_LIMIT) return full;
  return sql`
    WITH probe AS MATERIALIZED (
      SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, 0::real AS rank
        FROM (SELECT * FROM tenant_messages m WHERE ${rowFilters(tenantId, options)}
               ORDER BY ${orderBy('m', ordering)} LIMIT ${probeRows}) AS m
       WHERE ${plan.match}
       ORDER BY ${orderBy('m', ordering)}
       LIMIT ${wanted})
    SELECT * FROM probe WHERE (SELECT count(*) FROM probe) >= ${wanted}
    UNION ALL
    SELECT * FROM (${full}) AS f WHERE (SELECT count(*) FROM probe) < ${wanted}`;
}

/** Text of a context row: string content, text parts joined with ' ', `[multimodal content]`; 200 characters. */
function contextText(alias: string): Sql {
  const content = sql.ref(`${alias}.content`);
  const parts = sql.ref(`${alias}.content_parts`);
  return sql`left(CASE WHEN ${parts} IS NULL THEN coalesce(${content}, '') ELSE dc_parts_text(${parts}) END, ${sql.lit(
    CONTEXT_CHARS,
  )})`;
}

interface ResultRow {
  id: number;
  session_id: string;
  role: string;
  timestamp: Date;
  tool_name: string | null;
  indexed_text: string;
  source: string;
  model: string | null;
  started_at: Date;
  prev_role: string | null;
  prev_content: string | null;
  next_role: string | null;
  next_content: string | null;
}

/**
 * One statement: the page of hits, then for each its text, session fields and neighbours (same visibility,
 * `(timestamp, id)` order).
 */
async function findRows(
  tx: TenantTx,
  tenantId: string,
  plan: SearchPlan,
  ordering: Ordering,
  options: NormalisedOptions,
): Promise<ResultRow[]> {
  const result = await sql<ResultRow>`
    WITH hits AS MATERIALIZED (
      SELECT * FROM (${hitsQuery(tenantId, plan, ordering, options)}) AS h
       ORDER BY ${orderBy('h', ordering)}
      OFFSET ${options.offset} LIMIT ${options.limit})
    SELECT h.id, h.session_id, h.role, h."timestamp", h.tool_name, t.indexed_text, s.source, s.model, s.started_at,
           prev.role AS prev_role, prev.content AS prev_content, nxt.role AS next_role, nxt.content AS next_content
      FROM hits h
      -- LIMIT 1 keeps each lookup a per-hit index probe (the planner cannot flatten it into a join over the tenant).
      CROSS JOIN LATERAL (SELECT t.indexed_text FROM tenant_messages t WHERE t.id = h.id LIMIT 1) AS t
      CROSS JOIN LATERAL (
        SELECT s.source, s.model, s.started_at FROM sessions s
         WHERE s.tenant_id = current_setting('app.tenant_id', true) AND s.id = h.session_id LIMIT 1) AS s
      LEFT JOIN LATERAL (
        SELECT p.role, ${contextText('p')} AS content
          FROM tenant_messages p
         WHERE p.session_id = h.session_id AND (p."timestamp", p.id) < (h."timestamp", h.id)
           AND ${visibility('p', options.includeInactive)}
         ORDER BY p."timestamp" DESC, p.id DESC
         LIMIT 1) AS prev ON true
      LEFT JOIN LATERAL (
        SELECT n.role, ${contextText('n')} AS content
          FROM tenant_messages n
         WHERE n.session_id = h.session_id AND (n."timestamp", n.id) > (h."timestamp", h.id)
           AND ${visibility('n', options.includeInactive)}
         ORDER BY n."timestamp", n.id
         LIMIT 1) AS nxt ON true
     ORDER BY ${orderBy('h', ordering)}`.execute(tx);
  return result.rows;
}

function toIso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** A plan for one parsed query: how rows match, their rank (Latin), how snippets are made. */
interface SearchPlan {
  match: Sql;
  /**
   * The planner estimates the match well (only 1–2-character CJK terms: the element statistics of cjk_grams), so
   * its own choice between a recency-ordered scan and the gram index is trusted and the probe is skipped.
   */
  wellEstimated: boolean;
  rank: Sql;
  relevance: Ordering;
  snippet: (text: string) => string;
}

function planSearch(parsed: ParsedQuery): SearchPlan | null {
  const terms = positiveTerms(parsed);
  if (parsed.path === 'cjk') {
    return {
      match: cjkMatch(parsed),
      wellEstimated: parsed.groups.every((group) => group.every(isExactGram)),
      rank: sql`0::real`,
      relevance: 'newest',
      snippet: (text) => cjkSnippet(text, terms),
    };
  }
  const query = latinTsquery(parsed);
  if (!query) return null;
  return {
    match: sql`m.search_tsv @@ ${query}`,
    wellEstimated: false,
    rank: sql`ts_rank_cd(m.search_tsv, ${query})`,
    relevance: 'rank',
    snippet: (text) => latinSnippet(text, terms),
  };
}

function toResult(row: ResultRow, snippet: (text: string) => string): SearchResult {
  const context: SearchContextEntry[] = [];
  if (row.prev_role !== null) context.push({ role: row.prev_role, content: row.prev_content ?? '' });
  if (row.next_role !== null) context.push({ role: row.next_role, content: row.next_content ?? '' });
  return {
    id: row.id,
    session_id: row.session_id,
    role: row.role,
    snippet: snippet(row.indexed_text.trim()),
    timestamp: toIso(row.timestamp),
    tool_name: row.tool_name,
    source: row.source,
    model: row.model,
    session_started: toIso(row.started_at),
    context,
  };
}

/**
 * SPEC §14: the tenant's messages matching `query`, as results (§14.8). Anything that cannot be searched (not a
 * string, blank, no terms, no lexemes) gives `[]`; query content never throws. A result never comes from another
 * tenant: the search runs under withTenant (row-level security) through the tenant-filtered view.
 */
export async function searchMessages(
  db: Kysely<Database>,
  tenantId: string,
  query: unknown,
  options: SearchOptions = {},
): Promise<SearchResult[]> {
  const parsed = parseSearchQuery(query);
  const plan = parsed && planSearch(parsed);
  if (!plan) return [];
  const opts = normaliseSearchOptions(options);
  return withTenant(db, tenantId, async (tx) => {
    // Ranking reads every match: in a large tenant a common word costs enough for JIT compilation to start, which
    // adds tens of milliseconds to a query that returns 20 rows. This transaction only.
    if (plan.relevance === 'rank') await sql`SET LOCAL jit = off`.execute(tx);
    const ordering: Ordering = opts.sort === 'relevance' ? plan.relevance : opts.sort;
    const rows = await findRows(tx, tenantId, plan, ordering, opts);
    return rows.map((row) => toResult(row, plan.snippet));
  });
}
