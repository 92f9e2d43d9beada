// The caller's search options (SPEC §14.9), normalised: lists of strings only, a known sort, limit and offset clamped.
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
