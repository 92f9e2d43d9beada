// Search planner: a query and its options → the request for dc_search_messages (migrations/0005), as data. This
// parses the query (engine/search/query.ts) and builds the search plan — the Latin path's tsquery built by PostgreSQL
// functions, the CJK path's clauses — and the function turns it into SQL. Latin queries match search_tsv and rank by
// ts_rank_cd; CJK queries match substrings (ILIKE semantics) with the CJK gram column and index (migrations/0002)
// and the trigram index, newest first.
import { type RawBuilder, sql } from 'kysely';
import {
  cjkGramsOf,
  isCjkChar,
  type ParsedQuery,
  parseSearchQuery,
  positiveTerms,
  type QueryClause,
  type SearchPath,
  type SearchTerm,
} from '../../../engine/search/query.js';
import { cjkSnippet, latinSnippet } from '../../../engine/search/snippet.js';
import { normaliseSearchOptions, type SearchOptions } from './options.js';

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
 * Tuning of recency-ordered searches: how many of the newest (or oldest) rows of the scope are checked first, before
 * the whole search (see dc_search_messages, migrations/0023: a one-term CJK search may read on to twice as many when
 * that is cheaper than the index); 0 turns the probe off. Changed only by benchmarks and tests.
 */
export const searchTuning = { recencyProbeRows: 400 };

/** How hits are ordered: by rank (Latin relevance), or by recency. */
export type Ordering = 'rank' | 'newest' | 'oldest';

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
