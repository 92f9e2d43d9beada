// Message search (SPEC §14): tenant-scoped, inside withTenant, through the SECURITY DEFINER function
// dc_search_messages (migrations/0005), which applies the transaction's tenant to every row it reads and keeps the
// GIN indexes usable (under RLS PostgreSQL cannot use them for ILIKE and @@). This module parses the query and builds
// the search plan as data — the Latin path's tsquery built by PostgreSQL functions, the CJK path's clauses — and the
// function turns it into SQL. Latin queries match search_tsv and rank by ts_rank_cd; CJK queries match substrings
// (ILIKE semantics) with the CJK gram column and index (migrations/0002) and the trigram index, newest first. Every
// predicate is evaluated on the row itself — an index only finds candidates — so the results never depend on an
// index or on which plan PostgreSQL picks.
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from './schema.js';
import {
  cjkGramsOf,
  isCjkChar,
  type ParsedQuery,
  parseSearchQuery,
  positiveTerms,
  type QueryClause,
  type SearchPath,
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

/** Letters and digits: the words a Latin term contributes (dc_search_words keeps the same, as [[:alnum:]]). */
const WORD = /[\p{L}\p{N}]/u;

/**
 * One term's tsquery, built by functions from the term's words (SPEC §14.5): plainto_tsquery for a plain term,
 * phraseto_tsquery for a phrase, dc_prefix_tsquery (`:*` on the last word) for a prefix. User text is only ever a
 * function argument, never tsquery syntax. PostgreSQL evaluates it once, as the argument of dc_search_messages, whose
 * query receives it as a constant (EXECUTE … USING): the index condition and the row estimates see the real lexemes.
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

/** One CJK-path clause as the search function takes it (dc_search_cjk_clause in migrations/0005). */
export interface CjkClause {
  /** `gram`: `cjk_grams @> ARRAY[text]`; `strpos`: substring search; `ilike`: `ILIKE '%text%'` (escaped there). */
  kind: 'gram' | 'strpos' | 'ilike';
  text: string;
  /** Grams every matching row has (the gram-index prefilter of a positive clause); rechecked on the text. */
  grams: string[];
  negated: boolean;
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
function cjkClause(clause: QueryClause): CjkClause {
  const { text } = clause.term;
  const { negated } = clause;
  if (isExactGram(clause)) return { kind: 'gram', text, grams: [], negated };
  const grams = negated ? [] : cjkGramsOf(text);
  const substring = isUncased(text) && (negated || grams.length > 0);
  return { kind: substring ? 'strpos' : 'ilike', text, grams, negated };
}

/**
 * Tuning of recency-ordered searches: how many of the newest (or oldest) visible rows are checked first, before the
 * whole search (see dc_search_messages); 0 turns the probe off. Changed only by benchmarks.
 */
export const searchTuning = { recencyProbeRows: 400 };

/** How hits are ordered: by rank (Latin relevance), or by recency. */
export type Ordering = 'rank' | 'newest' | 'oldest';

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

/** What searchMessages asks of dc_search_messages (migrations/0005). */
export interface SearchRequest {
  /** Its first argument, the plan as data; the function refuses it unless `tenant` is the transaction's tenant. */
  plan: {
    tenant: string;
    path: SearchPath;
    /** CJK path: an OR of AND-groups of clauses. */
    groups: CjkClause[][];
    ordering: Ordering;
    roles: string[];
    sources: string[];
    excludeSources: string[];
    includeInactive: boolean;
    limit: number;
    offset: number;
    probeRows: number;
  };
  /** Its second, the Latin path's tsquery (an expression of PostgreSQL functions), or null. */
  query: Sql | null;
  snippet: (text: string) => string;
}

/** The request for `query` in `tenantId`, or null when nothing can be searched (SPEC §14.3: `[]`). */
export function searchRequest(tenantId: string, query: unknown, options: SearchOptions = {}): SearchRequest | null {
  const parsed = parseSearchQuery(query);
  const plan = parsed && planSearch(parsed);
  if (!plan) return null;
  const opts = normaliseSearchOptions(options);
  return {
    plan: {
      tenant: tenantId,
      path: plan.path,
      groups: plan.groups,
      ordering: opts.sort === 'relevance' ? plan.relevance : opts.sort,
      roles: opts.roles,
      sources: opts.sources,
      excludeSources: opts.excludeSources,
      includeInactive: opts.includeInactive,
      limit: opts.limit,
      offset: opts.offset,
      probeRows: searchTuning.recencyProbeRows,
    },
    query: plan.query,
    snippet: plan.snippet,
  };
}

/**
 * One statement: the page of hits in order, each with its text, session fields and neighbours (same visibility,
 * `(timestamp, id)` order). The function takes the tenant from app.tenant_id, which withTenant set.
 */
async function findRows(tx: TenantTx, request: SearchRequest): Promise<ResultRow[]> {
  const result = await sql<ResultRow>`
    SELECT r.id, r.session_id, r.role, r."timestamp", r.tool_name, r.indexed_text, r.source, r.model, r.started_at,
           r.prev_role, r.prev_content, r.next_role, r.next_content
      FROM dc_search_messages(${JSON.stringify(request.plan)}::jsonb, ${request.query ?? sql`NULL::tsquery`})
           WITH ORDINALITY AS r
     ORDER BY r.ordinality`.execute(tx);
  return result.rows;
}

function toIso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** A plan for one parsed query: how rows match (as data for dc_search_messages), the relevance order, snippets. */
interface SearchPlan {
  path: SearchPath;
  groups: CjkClause[][];
  /** Latin path: the query's tsquery, built by functions over the terms (never tsquery syntax). */
  query: Sql | null;
  relevance: Ordering;
  snippet: (text: string) => string;
}

function planSearch(parsed: ParsedQuery): SearchPlan | null {
  const terms = positiveTerms(parsed);
  if (parsed.path === 'cjk') {
    return {
      path: 'cjk',
      groups: parsed.groups.map((group) => group.map(cjkClause)),
      query: null,
      relevance: 'newest',
      snippet: (text) => cjkSnippet(text, terms),
    };
  }
  const query = latinTsquery(parsed);
  if (!query) return null;
  return {
    path: 'latin',
    groups: [],
    query,
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
 * tenant: the search runs under withTenant, through the function that applies the transaction's tenant itself.
 */
export async function searchMessages(
  db: Kysely<Database>,
  tenantId: string,
  query: unknown,
  options: SearchOptions = {},
): Promise<SearchResult[]> {
  const request = searchRequest(tenantId, query, options);
  if (!request) return [];
  return withTenant(db, tenantId, async (tx) =>
    (await findRows(tx, request)).map((row) => toResult(row, request.snippet)),
  );
}
