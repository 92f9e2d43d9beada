// HTTP contract of the search routes (workers/gateway/routes/search.ts, tenant key): SPEC §14 over the tenant's
// stored messages. `GET /v1/search?q=` takes lists as comma-separated text, `POST /v1/search` the same options in a
// JSON body (a long CJK query does not fit in a URL); a query SPEC §14.3 would cut is cut at 2,048 characters.

import { type Static, Type } from 'typebox';
import { MESSAGE_ROLES, nullable, offset, stringEnum, text } from './common.js';

/** The longest query text accepted (SPEC §14.9: a query of 10,000 characters is cut to 2,048 and completes). */
export const MAX_ACCEPTED_QUERY_CHARS = 10_000;

export const SEARCH_SORTS = ['relevance', 'newest', 'oldest'] as const;
const ROLE_LIST = `^(${MESSAGE_ROLES.join('|')})(,(${MESSAGE_ROLES.join('|')}))*$`;

const common = {
  includeInactive: Type.Optional(Type.Boolean()),
  sort: Type.Optional(stringEnum(SEARCH_SORTS)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  offset: Type.Optional(offset),
};

export const SearchQuery = Type.Object(
  {
    q: text(MAX_ACCEPTED_QUERY_CHARS),
    sources: Type.Optional(text(2_000, 0, { description: 'comma-separated' })),
    excludeSources: Type.Optional(text(2_000, 0, { description: 'comma-separated' })),
    roles: Type.Optional(Type.String({ pattern: ROLE_LIST })),
    ...common,
  },
  { additionalProperties: false },
);
export type SearchQuery = Static<typeof SearchQuery>;

const sourceList = Type.Array(text(64, 1), { maxItems: 100 });

export const SearchBody = Type.Object(
  {
    q: text(MAX_ACCEPTED_QUERY_CHARS),
    sources: Type.Optional(sourceList),
    excludeSources: Type.Optional(sourceList),
    roles: Type.Optional(Type.Array(stringEnum(MESSAGE_ROLES))),
    ...common,
  },
  { additionalProperties: false },
);
export type SearchBody = Static<typeof SearchBody>;

/** A neighbour of the hit: the previous and then the next row of the session (a missing one is omitted). */
const ContextEntry = Type.Object(
  {
    role: Type.String(),
    content: Type.String({ description: 'Cut to 200 characters; `[multimodal content]` for parts without text' }),
  },
  { additionalProperties: true },
);

/** SPEC §14.8. */
export const SearchResult = Type.Object({
  id: Type.Integer(),
  session_id: Type.String(),
  role: Type.String(),
  snippet: Type.String({ description: 'The text around the match, the match marked >>>like this<<<' }),
  timestamp: Type.String({ description: 'ISO 8601 UTC' }),
  tool_name: nullable(Type.String()),
  source: Type.String(),
  model: nullable(Type.String()),
  session_started: Type.String({ description: 'ISO 8601 UTC' }),
  context: Type.Array(ContextEntry),
});
export type SearchResult = Static<typeof SearchResult>;

export const SearchResults = Type.Object({ results: Type.Array(SearchResult) }, { description: 'The hits, in order' });
export type SearchResults = Static<typeof SearchResults>;
