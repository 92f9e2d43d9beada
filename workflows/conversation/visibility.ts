// What the Temporal UI shows of a conversation (DESIGN.md §3): its search attributes (the UI filters by them) and the
// current details line (tokens, threshold, compactions at a glance), set with every publication of the state.
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { ConversationStatus } from '../../contracts/conversation.js';
import { CompactionCount, ContextTokens, ConversationId, Model, SessionId, TenantId } from '../searchAttributes.js';

interface Ids {
  tenantId: string;
  conversationId: string;
}

/** Current details for the Temporal UI (DESIGN.md §3): tokens / threshold / compactions at a glance. */
export function detailsText(ids: Ids, status: ConversationStatus): string {
  const last = status.lastCompaction;
  const paused = status.blockedBy ?? status.autoPaused;
  return [
    `**${ids.tenantId} / ${ids.conversationId}** — session \`${status.sessionId}\`, model \`${status.model}\``,
    `Context: ${status.contextTokens} / ${status.contextLength} tokens (${status.usagePercent.toFixed(1)} %), ` +
      `threshold ${status.thresholdTokens}`,
    `Messages: ${status.activeMessages} active; compactions: ${status.compressionCount}` +
      (paused ? `; automatic compaction blocked: ${paused}` : ''),
    last ? `Last compaction: ${last.trigger} → ${last.status}` : 'No compaction yet',
    ...(status.compacting
      ? [`Compacting in the background: #${status.compacting.seq} (${status.compacting.trigger})`]
      : []),
    status.promptCaching.line,
  ].join('\n');
}

/** Shows the conversation's current status in the Temporal UI (workflow code only). */
export function showInTemporalUi(ids: Ids, status: ConversationStatus): void {
  upsertSearchAttributes([
    { key: TenantId, value: ids.tenantId },
    { key: ConversationId, value: ids.conversationId },
    { key: SessionId, value: status.sessionId },
    { key: Model, value: status.model },
    { key: CompactionCount, value: status.compressionCount },
    { key: ContextTokens, value: status.contextTokens },
  ]);
  setCurrentDetails(detailsText(ids, status));
}
