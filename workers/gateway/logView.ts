// What the gateway derives from the conversation log without the workflow: the content-free notification of an
// append (contracts/conversationLog.ts), the turn id of a chat request, and the status as it reports it (the
// workflow's published snapshot with the log's own counters).
import { createHash } from 'node:crypto';
import type { ConversationStatus, IncomingMessage, SubmitMessages } from '../../contracts/conversation.js';
import type { StoredBatch } from '../../contracts/conversationLog.js';
import { isRealUserMessage, quietReading } from '../../engine/index.js';
import type { AppendResult } from '../../infra/db/conversationAppend.js';
import type { StatusRow } from '../../infra/db/conversations.js';
import { accountFoldedTurns } from '../../workflows/conversation/cacheTelemetry.js';
import { startingStatus } from '../../workflows/conversation/state.js';

/** The status as the gateway reports it: the workflow's published snapshot and the log's own counters. */
export type PublishedStatus = ConversationStatus & {
  /** Batches accepted so far; `appliedSeq` (from the workflow) says how many of them have been decided on. */
  batchSeq: number;
  /** False until the workflow published its first snapshot (thresholds are then unknown). */
  published: boolean;
};

/** A turn is identified by the conversation and the idempotency keys of its request: a retry is the same turn. */
export function turnIdOf(conversationId: string, items: readonly IncomingMessage[]): string {
  const hash = createHash('sha256').update(conversationId);
  for (const item of items) hash.update('\n').update(item.idempotencyKey);
  return `turn:${hash.digest('hex').slice(0, 40)}`;
}

/** The content-free notification of an append (contracts/conversationLog.ts). */
export function storedBatchOf(result: AppendResult, batch: SubmitMessages): StoredBatch {
  const totals = result.totals;
  if (!totals) throw new Error(`session ${result.sessionId} has no conversation record`);
  const fresh = result.appended;
  const fromIndex = (i: number) => fresh.slice(i).reduce((sum, r) => sum + r.tokenEstimate, 0);
  const freshKeys = new Set(fresh.map((r) => r.idempotencyKey));
  // The trailing run of user messages: what awaits the model's answer.
  let firstUser = fresh.length;
  while (firstUser > 0 && fresh[firstUser - 1]!.role === 'user') firstUser -= 1;
  const stored: StoredBatch = {
    seq: fresh.length > 0 ? totals.batchSeq : null,
    latestSeq: totals.batchSeq,
    version: totals.version,
    activeMessages: totals.activeMessages,
    activeTokens: totals.activeTokens,
    sessionId: result.sessionId,
    rows: fresh.length,
    tokens: fromIndex(0),
    incoming:
      firstUser === fresh.length
        ? null
        : { rowId: fresh[firstUser]!.id, rows: fresh.length - firstUser, tokens: fromIndex(firstUser) },
    users: batch.messages.filter((item) => freshKeys.has(item.idempotencyKey) && isRealUserMessage(item.message, null))
      .length,
    freshAssistant: fresh.some((r) => r.role === 'assistant'),
  };
  if (batch.usage) {
    // The usage belongs to the response that produced the batch's last assistant message: only when that is new.
    let last = -1;
    batch.messages.forEach((item, i) => {
      if (item.message.role === 'assistant') last = i;
    });
    const key = last >= 0 ? batch.messages[last]!.idempotencyKey : null;
    const at = fresh.findIndex((r) => r.idempotencyKey === key);
    if (at >= 0) {
      stored.usage = batch.usage;
      stored.usageTailTokens = fromIndex(at);
    }
  }
  // A native checkpoint counts only when its reply is new (a retried request's copy decides nothing again).
  if (batch.nativeCheckpoint && stored.freshAssistant) stored.nativeCheckpoint = true;
  return stored;
}

/**
 * Quiet batches (engine/quietBatches.ts) are decided without the workflow: their reading and count come from the
 * fold while the rules they were judged by are current (before the first snapshot: the starting rules).
 */
function quietOverlay(row: StatusRow, base: ConversationStatus): Partial<ConversationStatus> {
  const rules = row.quiet_rules;
  if (!rules || rules.epoch !== row.notify_epoch) return {};
  const fold = row.quiet_fold;
  const reading = quietReading(rules, fold, row.active_tokens);
  const unpublished = fold !== null && fold.toSeq > row.state_seq;
  const pending = unpublished ? fold.batches : 0;
  // Chat turns the gateway ran count in the cache telemetry as the workflow will count them (quiet.ts).
  const turns = unpublished ? fold.turns : undefined;
  let cache: Partial<ConversationStatus> = {};
  if (turns) {
    const counted = structuredClone(base.cache);
    accountFoldedTurns(counted, turns);
    cache = { cache: counted };
  }
  return {
    ...cache,
    contextLength: rules.contextLength,
    thresholdTokens: rules.thresholdTokens,
    lastPromptTokens: reading.lastPromptTokens,
    contextTokens: reading.contextTokens,
    usagePercent: rules.contextLength ? Math.min(100, (reading.contextTokens / rules.contextLength) * 100) : 0,
    processedBatches: base.processedBatches + pending,
  };
}

/** The status from the conversation's row: the published snapshot, or the starting one before the first. */
export function statusOf(tenantId: string, row: StatusRow): PublishedStatus {
  const published = row.state;
  const base =
    published ??
    startingStatus(
      { tenantId, conversationId: row.id, model: row.model, provider: row.provider, contextLength: row.context_length },
      0,
      [],
    );
  const quiet = quietOverlay(row, base);
  return {
    ...base,
    ...quiet,
    sessionId: row.current_session_id,
    activeMessages: row.active_messages,
    batchSeq: row.batch_seq,
    appliedSeq: row.applied_seq,
    published: published !== null,
  };
}
