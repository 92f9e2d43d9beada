// Phase 3 by Anthropic's compaction request (SPEC §19 `summary_backend: anthropic_native`, issue #13 §3): the
// conversation up to the compaction's cut (pruned, from the previous block when the window starts from one this route
// issued) goes to the session's summary route as a compaction request with our §8.5.5 template as its instructions.
// The signed block it returns is kept on the compaction record with its origin; its readable content is the summary
// body (searchable like any summary), checked by the quality gate of issue #15 §3 (one more request naming what is
// missing; what is still missing is added after the block's content and sent after the block). Anything that is not
// a block — a route without blocks, a refused beta (remembered on the session), a refused request, an answer without
// a block, a window ending on an open tool call — leaves the summary to the local summariser, with the reason recorded.
import { Context } from '@temporalio/activity';
import type { NativeFallbackReason, SummaryUsage } from '../../contracts/compaction.js';
import type { CompactionRef } from '../../contracts/compactionActivities.js';
import { toStorableText } from '../../contracts/storableText.js';
import {
  appendToCriticalContext,
  buildCompactionInstructions,
  type ChatMessage,
  gateItemCount,
  gateItems,
  gateRepromptBlock,
  missingGateItems,
  retentionShare,
  sanitizeToolPairs,
} from '../../engine/index.js';
import { sameOrigin } from '../../engine/nativeCompaction.js';
import { updateCompaction } from '../../infra/db/compactions.js';
import { selectNativeSummary } from '../../infra/db/nativeSummaries.js';
import type { CompactionRow } from '../../infra/db/schema.js';
import { disableAnthropicNative } from '../../infra/db/sessions.js';
import { READ_ONLY, withTenant } from '../../infra/db/tenant.js';
import {
  type AnthropicCompactor,
  type CompactionOutcome,
  endsOnOpenToolCall,
  type LeadingCompaction,
  rowsAfterNativeSummary,
  textAfterBlock,
} from '../../infra/llm/anthropicCompaction.js';
import { anthropicSummaryMaxTokens } from '../../infra/llm/summarizer.js';
import { type CompactionActivityDeps, type CompactionSnapshot, prunedSnapshot } from './record.js';
import { summaryRequestOf } from './summaryCall.js';

type Pruned = CompactionSnapshot & { pruned: ChatMessage[] };

/** The session's route, its refusal flag, and the block the window starts from (same route only). */
async function sessionOf(deps: CompactionActivityDeps, tenantId: string, record: CompactionRow) {
  return withTenant(
    deps.db,
    tenantId,
    async (tx) => {
      const [session, previous] = await Promise.all([
        tx
          .selectFrom('sessions')
          .select(['model', 'provider', 'anthropic_native_disabled'])
          .where('tenant_id', '=', tenantId)
          .where('id', '=', record.session_id)
          .executeTakeFirst(),
        selectNativeSummary(tx, tenantId, record.session_id),
      ]);
      return { session, previous };
    },
    READ_ONLY,
  );
}

/** The conversation up to the cut as the request sends it, and the block it starts from. */
function requestMessages(
  snapshot: Pruned,
  compactor: AnthropicCompactor,
  previous: Awaited<ReturnType<typeof sessionOf>>['previous'],
): { messages: ChatMessage[]; leading: LeadingCompaction | null } {
  const { plan, pruned } = snapshot;
  const rows = pruned.slice(0, plan.cut).map((message, i) => ({ id: plan.inputRowIds[i] as number, message }));
  if (previous && sameOrigin(previous.native.origin, compactor.origin())) {
    const after = rowsAfterNativeSummary(rows, { rowId: previous.summaryRowId, summaryText: previous.summaryText });
    if (after) {
      const leading = {
        block: previous.native.block,
        after: textAfterBlock(previous.summaryBody, previous.native.block),
      };
      return { messages: sanitizeToolPairs(after.map((r) => r.message)), leading };
    }
  }
  return { messages: sanitizeToolPairs(rows.map((r) => r.message)), leading: null };
}

function addUsage(a: SummaryUsage, b: SummaryUsage): SummaryUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
    cache_write_tokens: a.cache_write_tokens + b.cache_write_tokens,
  };
}

/**
 * Tries the compaction request; `committed` when the record now holds the block's summary, else why not (the
 * caller runs the local summariser). Provider failures other than a refusal propagate (the activity's retry policy).
 */
export async function summarizeNatively(
  deps: CompactionActivityDeps,
  ref: CompactionRef,
  record: CompactionRow,
): Promise<'committed' | NativeFallbackReason> {
  if (record.native_fallback) return record.native_fallback;
  const { session, previous } = await sessionOf(deps, ref.tenantId, record);
  const compactor = deps.anthropicCompactorFor?.({
    model: session?.model ?? null,
    provider: session?.provider ?? null,
  });
  if (!compactor) return 'unsupported_route';
  if (session?.anthropic_native_disabled) return 'disabled_for_session';
  const snapshot = await prunedSnapshot(deps, ref.tenantId, record);
  const { budgetTokens, focusTopic, previousSummary } = summaryRequestOf(record, snapshot);
  const { messages, leading } = requestMessages(snapshot, compactor, previous);
  if (endsOnOpenToolCall(messages)) return 'open_tool_call';
  await updateCompaction(deps.db, ref.tenantId, ref.compactionId, { attempts: Context.current().info.attempt });
  const instructions = buildCompactionInstructions({
    previous: previousSummary !== null,
    budgetTokens,
    focusTopic: focusTopic ?? null,
  });
  const maxTokens = anthropicSummaryMaxTokens(budgetTokens);
  const first = await compactor.compact({ messages, leading, instructions, maxTokens });
  if (first.kind === 'fallback') {
    if (first.reason === 'beta_refused') await disableAnthropicNative(deps.db, ref.tenantId, record.session_id);
    return first.reason;
  }
  // The quality gate (issue #15 §3) on the block's readable content.
  const window = snapshot.input.slice(snapshot.plan.headEnd, snapshot.plan.cut);
  const items = gateItems(window, record.previous_summary);
  const retentionBefore = retentionShare(first.block.content, items);
  let chosen: Extract<CompactionOutcome, { kind: 'block' }> = first;
  let usage = first.usage;
  let missing = missingGateItems(first.block.content, items);
  if (gateItemCount(missing) > 0) {
    const reprompt = `${instructions}\n\n${gateRepromptBlock(first.block.content, missing)}`;
    const second = await compactor.compact({ messages, leading, instructions: reprompt, maxTokens }).catch(() => null);
    if (second?.kind === 'block') {
      usage = addUsage(usage, second.usage);
      if (retentionShare(second.block.content, items) >= retentionBefore) {
        chosen = second;
        missing = missingGateItems(second.block.content, items);
      }
    }
  }
  const content = chosen.block.content.trimEnd();
  const gated = appendToCriticalContext(content, missing);
  // The body starts with the block's content, so what the host adds can be sent after the block (textAfterBlock).
  const body = gated.startsWith(content) ? gated : `${content}\n${appendToCriticalContext('', missing).trim()}`;
  const retentionAfter = retentionShare(body, items);
  deps.metrics?.summaryRetention.observe({ stage: 'before' }, retentionBefore);
  deps.metrics?.summaryRetention.observe({ stage: 'after' }, retentionAfter);
  await updateCompaction(deps.db, ref.tenantId, ref.compactionId, {
    summary_body: toStorableText(body),
    summary_backend: 'anthropic_native',
    native_summary: { block: chosen.block, origin: compactor.origin() },
    summary_usage: usage,
    retention_before: retentionBefore,
    retention_after: retentionAfter,
    failure_class: null,
    error: null,
  });
  return 'committed';
}
