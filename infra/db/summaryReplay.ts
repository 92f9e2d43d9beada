// Replacing a fallback summary by a regenerated one (SPEC §13.7). The summary is produced by the caller (same
// previous summary, same focus topic, §8.5); this only swaps it into the transcript, in one retried transaction.
import { type Kysely, sql } from 'kysely';
import type { ReplayNotAppliedReason, ReplayNote } from '../../contracts/compaction.js';
import { SUMMARY_PREFIX } from '../../engine/constants.js';
import type { ChatMessage, ContentPart } from '../../engine/types.js';
import { COMMITTED_STATUSES, commitNoteOf, isCommitted, lockCompaction, selectCompaction } from './compactions.js';
import { lockConversation, setTotals } from './conversationHead.js';
import { insertMessageRows } from './messageInsert.js';
import { fieldsToMessage } from './messageRows.js';
import { MESSAGE_COLUMNS_OF_M, selectWithState } from './messages.js';
import type { CompactionRow, Database } from './schema.js';
import { lockSession } from './sessions.js';
import { CompactionNotFoundError, CompactionNotReplayableError } from './storeErrors.js';
import { type WriteRetryOptions, withTenantWrite } from './writeRetry.js';

export interface ReplayedSummary {
  compactionId: string;
  /** SUMMARY_PREFIX + '\n' + newSummaryBody (§8.5.7). */
  newSummaryText: string;
  newSummaryBody: string;
}

export interface ReplayOutcome {
  applied: boolean;
  reason?: ReplayNotAppliedReason;
  /** The session whose transcript holds (or held) the summary. */
  sessionId: string;
  /** When applied: the new row that holds the summary. */
  summaryRowId?: number;
}

function replayNoteOf(record: CompactionRow): ReplayNote | undefined {
  return record.stats?.replay ?? undefined;
}

/** The session holding the compaction's summary row: the new one after a rotation. */
function transcriptSessionOf(record: Pick<CompactionRow, 'session_id' | 'new_session_id'>): string {
  return record.new_session_id ?? record.session_id;
}

/** True when no committed compaction of the transcript's session is newer than this one. */
async function isLatestCommitted(tx: Kysely<Database>, tenantId: string, record: CompactionRow): Promise<boolean> {
  const sessionId = transcriptSessionOf(record);
  const latest = await tx
    .selectFrom('compactions')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('status', 'in', [...COMMITTED_STATUSES])
    .where((eb) => eb.or([eb('session_id', '=', sessionId), eb('new_session_id', '=', sessionId)]))
    .orderBy('completed_at', (ob) => ob.desc().nullsLast())
    .orderBy('seq', 'desc')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return latest?.id === record.id;
}

async function findSummaryRow(tx: Kysely<Database>, tenantId: string, record: CompactionRow) {
  let query = selectWithState(tx, tenantId)
    .select(['m.id', 's.position', 's.active', 'm.token_estimate', ...MESSAGE_COLUMNS_OF_M])
    .where('m.session_id', '=', transcriptSessionOf(record));
  const summaryRowId = commitNoteOf(record)?.summaryRowId;
  if (typeof summaryRowId === 'number') query = query.where('s.message_id', '=', summaryRowId);
  else query = query.where('s.compaction_id', '=', record.id).where('m.summary_body', 'is not', null);
  return query.orderBy('s.message_id', 'desc').limit(1).executeTakeFirst();
}

/** Replaces the old summary text at the start of `text`; text that does not start with it is all summary. */
function swapSummaryText(text: string, oldText: string, newText: string): string {
  return text.startsWith(oldText) ? newText + text.slice(oldText.length) : newText;
}

/** Same shape (§13.7): standalone stays standalone; a merged row keeps its own content after the new summary. */
export function withReplacedSummary(message: ChatMessage, oldText: string, newText: string): ChatMessage {
  const { content } = message;
  if (typeof content === 'string') return { ...message, content: swapSummaryText(content, oldText, newText) };
  if (!Array.isArray(content)) return { ...message, content: newText };
  const first = content.findIndex((part) => part.type === 'text');
  if (first < 0) return { ...message, content: [{ type: 'text', text: newText }, ...content] };
  const parts: ContentPart[] = content.map((part, i) =>
    i === first && part.type === 'text' ? { ...part, text: swapSummaryText(part.text, oldText, newText) } : part,
  );
  return { ...message, content: parts };
}

async function recordReplay(tx: Kysely<Database>, tenantId: string, record: CompactionRow, note: ReplayNote) {
  const commit = commitNoteOf(record);
  const stats = {
    ...(record.stats ?? {}),
    ...(commit && note.applied ? { commit: { ...commit, summaryRowId: note.summaryRowId } } : {}),
  };
  await tx
    .updateTable('compactions')
    .set({
      ...(note.applied ? { summary: note.summary, summary_body: note.summaryBody, status: 'committed' } : {}),
      replayable: false,
      stats: sql`${JSON.stringify(stats)}::jsonb || jsonb_build_object('replay', ${JSON.stringify(note)}::jsonb || jsonb_build_object('replayedAt', now()))`,
      updated_at: sql`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', record.id)
    .execute();
}

function outcomeOf(record: CompactionRow, note: ReplayNote): ReplayOutcome {
  return {
    applied: note.applied,
    sessionId: transcriptSessionOf(record),
    ...(note.reason ? { reason: note.reason } : {}),
    ...(note.summaryRowId !== undefined ? { summaryRowId: note.summaryRowId } : {}),
  };
}

/**
 * SPEC §13.7. Applied only while this compaction is the latest committed one of its transcript's session and its
 * summary row is still active: that row becomes `active = false, compacted = true` and a row with the new summary in
 * the same shape takes its position. Otherwise the transcript is left alone and the new summary is only recorded on
 * the compaction (`stats.replay`). Either way the record stops being replayable. Repeating the same replay returns
 * the first outcome.
 */
export function replaceReplayedSummary(
  db: Kysely<Database>,
  tenantId: string,
  input: ReplayedSummary,
  retry?: WriteRetryOptions,
): Promise<ReplayOutcome> {
  return withTenantWrite(
    db,
    tenantId,
    async (tx) => {
      const peek = await selectCompaction(tx, tenantId, input.compactionId);
      if (!peek) throw new CompactionNotFoundError(input.compactionId);
      // Lock order of every log writer: conversation, session, compaction.
      const conversation = await lockConversation(tx, tenantId, peek.conversation_id);
      await lockSession(tx, tenantId, transcriptSessionOf(peek));
      const record = await lockCompaction(tx, tenantId, input.compactionId);
      const previous = replayNoteOf(record);
      if (previous && previous.summary === input.newSummaryText && previous.summaryBody === input.newSummaryBody) {
        return outcomeOf(record, previous);
      }
      if (!isCommitted(record)) throw new CompactionNotReplayableError(record.id, `its status is ${record.status}`);
      if (!record.replayable) throw new CompactionNotReplayableError(record.id, 'it is not replayable');

      const base = { summary: input.newSummaryText, summaryBody: input.newSummaryBody };
      const latest = await isLatestCommitted(tx, tenantId, record);
      const row = latest ? await findSummaryRow(tx, tenantId, record) : undefined;
      if (!latest || !row?.active) {
        const note: ReplayNote = { ...base, applied: false, reason: latest ? 'summary_row_inactive' : 'not_latest' };
        await recordReplay(tx, tenantId, record, note);
        return outcomeOf(record, note);
      }

      const oldText = record.summary ?? `${SUMMARY_PREFIX}\n${record.summary_body ?? ''}`;
      const message = withReplacedSummary(fieldsToMessage(row), oldText, input.newSummaryText);
      await tx
        .updateTable('message_state')
        .set({ active: false, compacted: true })
        .where('tenant_id', '=', tenantId)
        .where('message_id', '=', row.id)
        .execute();
      const target = { sessionId: transcriptSessionOf(record), conversationId: record.conversation_id };
      const [inserted] = await insertMessageRows(tx, tenantId, target, [
        { message, position: row.position, compactionId: record.id, summaryBody: input.newSummaryBody },
      ]);
      if (conversation?.current_session_id === target.sessionId && inserted) {
        await setTotals(tx, tenantId, conversation.id, {
          activeMessages: conversation.active_messages,
          activeTokens: conversation.active_tokens - row.token_estimate + inserted.tokenEstimate,
        });
      }
      const note: ReplayNote = { ...base, applied: true, previousSummaryRowId: row.id, summaryRowId: inserted?.id };
      await recordReplay(tx, tenantId, record, note);
      return outcomeOf(record, note);
    },
    retry,
  );
}
