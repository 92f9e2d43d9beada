// Search row mapping: rows of dc_search_messages → results (SPEC §14.8) with their snippets (§14.7).
import type { ResultRow } from './sql.js';

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

function toIso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function toResult(row: ResultRow, snippet: (text: string) => string): SearchResult {
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
