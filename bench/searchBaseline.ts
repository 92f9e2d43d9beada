// The baseline of bench/search.ts, stored the way the reference system stores sessions: SQLite with one `messages`
// table and two external-content FTS5 tables over the searchable text — unicode61 (words, bm25) and trigram
// (substrings). Latin queries: unicode61 MATCH ordered by bm25; CJK terms of ≥ 3 characters: trigram MATCH; 1–2
// characters: LIKE over the tenant's rows in recency order. Results carry the same fields as searchMessages.
import Database from 'better-sqlite3';
import {
  escapeLike,
  type ParsedQuery,
  parseSearchQuery,
  positiveTerms,
  type QueryClause,
  type SearchTerm,
} from '../engine/search/query.js';
import { cjkSnippet } from '../engine/search/snippet.js';
import type { SearchResult } from '../infra/db/search/index.js';
import type { CorpusRow, CorpusSession } from './searchCorpus.js';
import { indexedText } from './searchCorpus.js';

/** The same shape as searchMessages' results (SPEC §14.8). */
export type BaselineResult = SearchResult;

interface HitRow {
  id: number;
  session_id: string;
  role: string;
  timestamp: number;
  tool_name: string | null;
  snippet: string | null;
  text: string;
}

function contentText(row: CorpusRow): string {
  const c = row.message.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    const texts = c.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text);
    return texts.length > 0 ? texts.join(' ') : '[multimodal content]';
  }
  return '';
}

/** FTS5 expression for one term: a quoted string (FTS5 tokenizes it; several tokens make a phrase). */
function ftsString(term: SearchTerm, prefix: boolean): string {
  return `"${term.text.replace(/"/g, '""')}"${prefix && term.prefix ? '*' : ''}`;
}

/** FTS5 query with the same operators: precedence NOT > AND > OR. */
function ftsExpression(parsed: ParsedQuery, prefix: boolean): string {
  return parsed.groups
    .map((group) => {
      const positive = group.filter((c) => !c.negated).map((c) => ftsString(c.term, prefix));
      let expr = `(${positive.join(' AND ')})`;
      for (const c of group.filter((c) => c.negated)) expr = `(${expr} NOT ${ftsString(c.term, prefix)})`;
      return expr;
    })
    .join(' OR ');
}

const termLength = (term: SearchTerm) => Array.from(term.text).length;

export class SqliteBaseline {
  readonly db: Database.Database;
  private readonly insertRow: Database.Statement;
  private readonly insertSession: Database.Statement;
  private readonly prev: Database.Statement;
  private readonly next: Database.Statement;
  private readonly session: Database.Statement;

  constructor(file: string, existing = false) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    if (!existing) {
      this.db.exec(`
        CREATE TABLE sessions (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, source TEXT, model TEXT, started_at INTEGER);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, role TEXT,
                               content TEXT, tool_name TEXT, timestamp INTEGER, visible INTEGER, text TEXT);
        CREATE INDEX messages_tenant_time ON messages (tenant_id, timestamp);
        CREATE INDEX messages_session_time ON messages (session_id, timestamp);
        CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id', tokenize='unicode61');
        CREATE VIRTUAL TABLE messages_trgm USING fts5(text, content='messages', content_rowid='id', tokenize='trigram');
      `);
    }
    this.insertRow = this.db.prepare(
      'INSERT INTO messages (id, tenant_id, session_id, role, content, tool_name, timestamp, visible, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.insertSession = this.db.prepare(
      'INSERT INTO sessions (id, tenant_id, source, model, started_at) VALUES (?, ?, ?, ?, ?)',
    );
    const neighbour = (cmp: string, dir: string) =>
      this.db.prepare(
        `SELECT role, substr(content, 1, 200) AS content FROM messages
          WHERE session_id = ? AND visible = 1 AND (timestamp, id) ${cmp} (?, ?)
          ORDER BY timestamp ${dir}, id ${dir} LIMIT 1`,
      );
    this.prev = neighbour('<', 'DESC');
    this.next = neighbour('>', 'ASC');
    this.session = this.db.prepare('SELECT source, model, started_at FROM sessions WHERE id = ?');
  }

  load(sessions: readonly CorpusSession[], rows: readonly CorpusRow[]): void {
    this.db.transaction(() => {
      for (const s of sessions) this.insertSession.run(s.id, s.tenantId, s.source, s.model, s.startedAt);
      for (const r of rows) {
        this.insertRow.run(
          r.id,
          r.tenantId,
          r.sessionId,
          r.message.role,
          contentText(r),
          r.message.role === 'tool' ? (r.message.name ?? null) : null,
          r.timestamp,
          r.active || r.compacted ? 1 : 0,
          indexedText(r.message),
        );
      }
    })();
  }

  /** Builds both FTS5 indexes from the content table. */
  buildIndexes(): void {
    this.db.exec(`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
                  INSERT INTO messages_trgm (messages_trgm) VALUES ('rebuild');
                  ANALYZE;`);
  }

  /** The ids of every match (no limit), for agreement checks. */
  matchIds(tenantId: string, query: string): number[] {
    return this.hits(tenantId, query, -1).map((h) => h.id);
  }

  search(tenantId: string, query: string, limit: number): BaselineResult[] {
    const parsed = parseSearchQuery(query);
    if (!parsed) return [];
    const terms = positiveTerms(parsed);
    return this.hits(tenantId, query, limit).map((h) => {
      const session = this.session.get(h.session_id) as { source: string; model: string | null; started_at: number };
      const context: Array<{ role: string; content: string }> = [];
      for (const stmt of [this.prev, this.next]) {
        const n = stmt.get(h.session_id, h.timestamp, h.id) as { role: string; content: string } | undefined;
        if (n) context.push(n);
      }
      return {
        id: h.id,
        session_id: h.session_id,
        role: h.role,
        snippet: h.snippet ?? cjkSnippet(h.text.trim(), terms),
        timestamp: new Date(h.timestamp).toISOString(),
        tool_name: h.tool_name,
        source: session.source,
        model: session.model,
        session_started: new Date(session.started_at).toISOString(),
        context,
      };
    });
  }

  private hits(tenantId: string, query: string, limit: number): HitRow[] {
    const parsed = parseSearchQuery(query);
    if (!parsed) return [];
    try {
      return parsed.path === 'latin' ? this.latin(tenantId, parsed, limit) : this.cjk(tenantId, parsed, limit);
    } catch {
      return []; // FTS5 syntax it cannot take: nothing found
    }
  }

  private latin(tenantId: string, parsed: ParsedQuery, limit: number): HitRow[] {
    return this.db
      .prepare(
        `SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, m.text,
                snippet(messages_fts, 0, '>>>', '<<<', '...', 40) AS snippet
           FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
          WHERE messages_fts MATCH ? AND m.tenant_id = ? AND m.visible = 1
          ORDER BY bm25(messages_fts), m.timestamp DESC, m.id DESC LIMIT ?`,
      )
      .all(ftsExpression(parsed, true), tenantId, limit) as HitRow[];
  }

  private cjk(tenantId: string, parsed: ParsedQuery, limit: number): HitRow[] {
    const clauses = parsed.groups.flat();
    if (clauses.every((c) => termLength(c.term) >= 3)) {
      // Everything through the trigram index, one MATCH.
      return this.db
        .prepare(
          `SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, m.text,
                  snippet(messages_trgm, 0, '>>>', '<<<', '...', 40) AS snippet
             FROM messages_trgm JOIN messages m ON m.id = messages_trgm.rowid
            WHERE messages_trgm MATCH ? AND m.tenant_id = ? AND m.visible = 1
            ORDER BY m.timestamp DESC, m.id DESC LIMIT ?`,
        )
        .all(ftsExpression(parsed, false), tenantId, limit) as HitRow[];
    }
    // Short terms: LIKE over the tenant's rows, newest first (the index gives the order, so LIMIT stops early).
    const params: unknown[] = [];
    const clause = (c: QueryClause) => {
      let predicate: string;
      if (termLength(c.term) >= 3) {
        predicate = 'm.id IN (SELECT rowid FROM messages_trgm WHERE messages_trgm MATCH ?)';
        params.push(ftsString(c.term, false));
      } else {
        predicate = "m.text LIKE ? ESCAPE '\\'";
        params.push(`%${escapeLike(c.term.text)}%`);
      }
      return c.negated ? `NOT (${predicate})` : predicate;
    };
    const where = parsed.groups.map((g) => `(${g.map(clause).join(' AND ')})`).join(' OR ');
    return this.db
      .prepare(
        `SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, m.text, NULL AS snippet
           FROM messages m
          WHERE m.tenant_id = ? AND m.visible = 1 AND (${where})
          ORDER BY m.timestamp DESC, m.id DESC LIMIT ?`,
      )
      .all(tenantId, ...params, limit) as HitRow[];
  }

  close(): void {
    this.db.close();
  }
}
