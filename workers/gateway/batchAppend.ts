// The gateway's append (DESIGN.md §3): a batch is committed in one tenant-scoped transaction and, in the same
// transaction, judged against the workflow's published rules (quiet batches, infra/db/quietBatches.ts): the verdict
// says whether the workflow must hear of it. A chat turn's append also reads the turn as stored by an earlier
// attempt and, for a turn the gateway may run itself (chatTurns.ts), the transcript it goes to the model with.
import type { Kysely, Selectable } from 'kysely';
import type { SubmitMessages } from '../../contracts/conversation.js';
import type { StoredBatch } from '../../contracts/conversationLog.js';
import { AppendGroups } from '../../infra/db/appendGroups.js';
import { type AppendResult, appendToConversation } from '../../infra/db/conversationAppend.js';
import type { StoredMessage } from '../../infra/db/messages.js';
import { type PipelinedStatement, pipelined } from '../../infra/db/queuedStatements.js';
import { decideNotification, type NotifyDecision } from '../../infra/db/quietBatches.js';
import type { ConversationRow, Database, TurnsTable } from '../../infra/db/schema.js';
import { type TurnRecord, turnOf, turnQuery } from '../../infra/db/turns.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import { storedBatchOf } from './logView.js';
import { TranscriptCache, type TranscriptReading } from './transcriptCache.js';

/** Where the gateway's append groups are counted (the process's /metrics). */
export type AppendMetrics = Pick<Metrics, 'appendGroupBatches' | 'appendGroupsDissolved'>;

/**
 * The gateway's append groups (infra/db/appendGroups.ts) for a write pool of `connections` (unset: not known, only
 * the cores count), each transaction's batches and each rollback counted in `metrics`.
 */
export function gatewayAppendGroups(
  db: Kysely<Database>,
  connections: number | undefined,
  metrics: AppendMetrics | undefined,
): AppendGroups {
  return new AppendGroups(db, {
    ...(connections !== undefined ? { connections } : {}),
    ...(metrics
      ? {
          onTransaction: (n) => metrics.appendGroupBatches.observe(n),
          onDissolved: (reason) => metrics.appendGroupsDissolved.inc({ reason }),
        }
      : {}),
  });
}

export interface AppendDecideOptions {
  /** The workflow hears of the batch whatever the rules say (a chat turn it runs). */
  loud?: boolean;
  /** The chat turn of the batch: read as stored by an earlier attempt, in the same transaction. */
  turnId?: string;
  /**
   * The gateway runs the turn itself if the batch is quiet (judged with the turn's preflight check): the transcript,
   * read under the append's lock, comes back with it.
   */
  direct?: boolean;
  /** Where that transcript is kept between turns (transcriptCache.ts); without it, every row is read each turn. */
  transcripts?: TranscriptCache;
  /** The key of the message the batch must follow (conversationAppend.ts `after`). */
  after?: string;
  /** Checks the conversation's row as locked before anything is written (conversationAppend.ts `admit`). */
  admit?: (head: ConversationRow) => void;
  /**
   * Where a plain batch (no turn, no `after`, no `admit`) is committed, maybe in one transaction with other batches
   * (of any tenants, each under its own) that arrived while every write slot was busy (infra/db/appendGroups.ts).
   * Without it, on its own.
   */
  groups?: AppendGroups;
}

export interface AppendDecided {
  stored: StoredBatch;
  /** The conversation's row as the append locked it (before the batch). */
  head: ConversationRow;
  decision: NotifyDecision;
  turn: TurnRecord | null;
  /** The active transcript after the batch, for a turn the gateway runs (not stored yet); else null. */
  context: StoredMessage[] | null;
  /** `after` did not hold: nothing of the batch was stored. */
  stale: boolean;
}

export async function appendAndDecide(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  batch: SubmitMessages,
  options: AppendDecideOptions = {},
): Promise<AppendDecided> {
  let decided: Omit<AppendDecided, 'turn' | 'context' | 'stale'> | undefined;
  let stale = false;
  /** The reads of a chat turn's append, answered with its COMMIT. */
  const reads: { turn?: PipelinedStatement<Selectable<TurnsTable>>; transcript?: () => Promise<TranscriptReading> } =
    {};
  const { turnId, transcripts } = options;
  const settle = (result: AppendResult, head: ConversationRow) => {
    stale = result.stale === true;
    const stored = storedBatchOf(result, batch);
    const verdict = decideNotification(head, stored, { loud: options.loud, turnFollows: options.direct === true });
    decided = { stored, head, decision: verdict.decision };
    return verdict.set;
  };
  if (options.groups && !turnId && !options.admit && options.after === undefined) {
    await options.groups.append(tenantId, conversationId, batch.messages, { settle });
  } else {
    await appendToConversation(db, tenantId, conversationId, batch.messages, {
      ...(options.after !== undefined ? { after: options.after } : {}),
      ...(options.admit ? { admit: options.admit } : {}),
      settle,
      ...(turnId
        ? {
            within: async (tx) => {
              // The turn runs here: its batch is quiet, or the workflow is told of it first and cannot change what
              // the model is sent (chatTurns.ts). The turn as stored by an earlier attempt and the transcript are read
              // in the same transaction, both travelling with its COMMIT: the transcript is read before it is known
              // whether that attempt stored a reply (then it is not used: a retry's read is wasted, every other turn
              // saves two round trips).
              const verdict = decided?.decision;
              const here =
                verdict !== undefined && (!verdict.notify ? decided?.stored.seq !== null : verdict.turnUnwaited);
              reads.turn = await pipelined(tx, turnQuery(tx, turnId));
              delete reads.transcript;
              if (options.direct && here && decided) {
                reads.transcript = await (transcripts ?? new TranscriptCache()).queueRead(tx, tenantId, decided.head);
              }
            },
          }
        : {}),
    });
  }
  if (!decided) throw new Error(`conversation ${conversationId}: the append did not run`);
  // Committed: what travelled with the COMMIT has answered.
  const turn = reads.turn ? turnOf((await reads.turn.result).rows[0]) : null;
  const reading = turn?.messageId == null && reads.transcript ? await reads.transcript() : null;
  const context = reading?.rows ?? null;
  // The reading may serve the next turn.
  if (reading && transcripts) transcripts.keep(tenantId, conversationId, reading);
  return { ...decided, turn, context, stale };
}
