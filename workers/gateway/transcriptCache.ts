// The transcripts of the conversations whose turns this gateway runs (chatTurns.ts), kept between turns so that a
// turn reads only what was appended since its previous one instead of the whole active transcript (issue #11: CPU
// per turn; the whole read was a tenth of the server's time per turn and grew with the conversation).
//
// Safe by the log's own counters, not by trust in this process: a message row never changes after its insert, and a
// reading stays valid as long as the conversation's rewrites (infra/db/conversationHead.ts `rewritesOf`) and current
// session are those it was read at — then its rows are still active, in place, and everything since sits after its
// last position. Whichever process appended in between (another gateway, the worker), the rows after that position
// are read under the append's lock. A reading is kept only after its transaction committed. Least recently used
// transcripts go first beyond the budget (estimated tokens, the rows' own estimates).
import type { Kysely } from 'kysely';
import { rewritesOf } from '../../infra/db/conversationHead.js';
import { activeRowsQuery, rowToStored, type StoredMessage } from '../../infra/db/messages.js';
import { pipelined } from '../../infra/db/queuedStatements.js';
import type { ConversationRow, Database } from '../../infra/db/schema.js';

/** About 16 million characters of message text (4 a token). */
export const TRANSCRIPT_CACHE_TOKENS = 4_000_000;

/** The active transcript as read under an append's lock, and what it is valid for. */
export interface TranscriptReading {
  sessionId: string;
  rewrites: number;
  rows: StoredMessage[];
  /** The rows' estimated tokens: the kept reading's count plus the new rows' (not a sum over the whole transcript). */
  tokens: number;
}

const tokensOf = (rows: readonly StoredMessage[]) => rows.reduce((sum, row) => sum + row.tokenEstimate, 0);

export class TranscriptCache {
  private readonly entries = new Map<string, TranscriptReading>();
  private tokens = 0;

  constructor(private readonly budgetTokens = TRANSCRIPT_CACHE_TOKENS) {}

  /**
   * Queues the read of the conversation's active transcript in its append's transaction (`head`: its row as
   * locked): the rows after the kept reading when that reading is still valid, else every active row. The statement
   * travels with the transaction's next flight or its COMMIT (`pipelined`); `reading()` gives the transcript once
   * that flight is answered.
   */
  async queueRead(
    tx: Kysely<Database>,
    tenantId: string,
    head: Pick<ConversationRow, 'id' | 'current_session_id' | 'version' | 'batch_seq'>,
  ): Promise<() => Promise<TranscriptReading>> {
    const sessionId = head.current_session_id;
    const rewrites = rewritesOf(head);
    const kept = this.entries.get(keyOf(tenantId, head.id));
    const valid = kept && kept.sessionId === sessionId && kept.rewrites === rewrites ? kept : null;
    const after = valid?.rows.at(-1)?.position;
    const read = await pipelined(tx, activeRowsQuery(tx, tenantId, sessionId, after));
    return async () => {
      const rows = (await read.result).rows.map(rowToStored);
      const tokens = tokensOf(rows);
      return after === undefined || !valid
        ? { sessionId, rewrites, rows, tokens }
        : { sessionId, rewrites, rows: valid.rows.concat(rows), tokens: valid.tokens + tokens };
    };
  }

  /** Keeps a reading whose transaction committed. */
  keep(tenantId: string, conversationId: string, reading: TranscriptReading): void {
    const key = keyOf(tenantId, conversationId);
    this.drop(key);
    const { tokens } = reading;
    if (tokens > this.budgetTokens || reading.rows.length === 0) return;
    this.entries.set(key, reading);
    this.tokens += tokens;
    for (const [oldest, entry] of this.entries) {
      if (this.tokens <= this.budgetTokens) break;
      this.entries.delete(oldest);
      this.tokens -= entry.tokens;
    }
  }

  /** How many transcripts and estimated tokens are kept (metrics, tests). */
  get size(): { transcripts: number; tokens: number } {
    return { transcripts: this.entries.size, tokens: this.tokens };
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.tokens -= entry.tokens;
  }
}

const keyOf = (tenantId: string, conversationId: string) => `${tenantId}\n${conversationId}`;
