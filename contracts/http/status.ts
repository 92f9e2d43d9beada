// What the conversation workflow reports, as the HTTP API answers it: the status (SPEC §16: tokens, threshold,
// usage, compactions, breakers, cache telemetry), the compaction report and a model call's usage. Each schema is
// checked against its contract type (contracts/conversation.ts), so the two cannot drift apart.

import { type Static, Type } from 'typebox';
import type { CompressionStats } from '../../engine/index.js';
import { COMPACTION_STATUSES, COMPACTION_TRIGGERS, RECORDED_TRIGGERS } from '../compaction.js';
import {
  AUTO_PAUSES,
  type CacheTelemetry,
  type CompactionResult,
  type ConversationStatus,
  type TurnUsage as TurnUsageContract,
} from '../conversation.js';
import { type Assert, nullable, openObject, type Same, snapshot, stringEnum } from './common.js';

const nullableString = nullable(Type.String());

/** The user-visible report of one compaction (manual compress, status `lastCompaction`, chat turns). */
export const CompactionReport = Type.Object(
  {
    compactionId: Type.String(),
    trigger: stringEnum(
      COMPACTION_TRIGGERS.filter(
        (t) => !(RECORDED_TRIGGERS as readonly string[]).includes(t),
      ) as CompactionResult['trigger'][],
    ),
    status: stringEnum(
      COMPACTION_STATUSES.filter((s) => s !== 'pending' && s !== 'running') as CompactionResult['status'][],
    ),
    notice: nullableString,
    noopReason: nullableString,
    sessionId: Type.String(),
    stats: nullable(openObject<CompressionStats>('SPEC §8.8 compression stats')),
    retention: nullable(
      Type.Object(
        { before: Type.Number(), after: Type.Number() },
        {
          description:
            "Share of the window's identifiers and constraints the LLM summary kept, before and after the quality gate",
        },
      ),
    ),
    error: nullableString,
  },
  { description: 'What one compaction did (SPEC §16.5 notice, stats)' },
);
export type CompactionReport = Static<typeof CompactionReport>;
export type CompactionReportMatchesContract = Assert<Same<CompactionReport, CompactionResult>>;

const count = Type.Number();

/** Token usage of one model call; `prompt_tokens` is the whole input (uncached + cache reads + cache writes). */
export const TurnUsage = Type.Object({
  prompt_tokens: count,
  completion_tokens: count,
  total_tokens: count,
  cache_read_tokens: count,
  cache_write_tokens: count,
  uncached_input_tokens: count,
});
export type TurnUsage = Static<typeof TurnUsage>;
export type TurnUsageMatchesContract = Assert<Same<TurnUsage, TurnUsageContract>>;

const CacheTelemetrySchema = Type.Object(
  {
    turns: count,
    cacheReadTokens: count,
    cacheWriteTokens: count,
    uncachedInputTokens: count,
    lastTurn: nullable(TurnUsage),
    watching: nullable(Type.Object({ compactionId: Type.String(), turnsSince: count, rewriteTokens: nullable(count) })),
    lastRecovery: nullable(Type.Object({ compactionId: Type.String(), rewriteTokens: count, recoveryTurns: count })),
  },
  { additionalProperties: true },
);
export type CacheTelemetryMatchesContract = Assert<Same<Static<typeof CacheTelemetrySchema>, CacheTelemetry>>;

const statusProperties = {
  tenantId: Type.String(),
  conversationId: Type.String(),
  sessionId: Type.String(),
  model: Type.String(),
  provider: nullableString,
  contextLength: count,
  thresholdPercent: count,
  thresholdTokens: count,
  lastPromptTokens: count,
  contextTokens: count,
  usagePercent: count,
  compressionCount: count,
  activeMessages: count,
  ineffectiveStrikes: count,
  fallbackStreak: count,
  blockedBy: nullable(stringEnum(['cooldown', 'structural_backoff', 'ineffective'])),
  autoPaused: nullable(stringEnum(AUTO_PAUSES)),
  autoCompactionsLastHour: count,
  trippedUntil: nullableString,
  summaryCooldownUntil: nullableString,
  structuralBackoffUntil: nullableString,
  hygieneCooldownUntil: nullableString,
  policyVersion: count,
  pendingItems: count,
  processedBatches: count,
  appliedSeq: count,
  lastCompaction: nullable(CompactionReport),
  compacting: nullable(
    Type.Object(
      {
        compactionId: Type.String(),
        seq: count,
        trigger: stringEnum(['preflight', 'post_response'] as CompactionResult['trigger'][]),
        startedAt: Type.String(),
      },
      { description: 'The automatic compaction running in the background (SPEC §19 background)' },
    ),
  ),
  promptCaching: Type.Object({ enabled: Type.Boolean(), reason: Type.String(), line: Type.String() }),
  nativeCompactThreshold: nullable(
    Type.Integer({
      minimum: 1,
      description:
        'SPEC §15.1: the compact_threshold sent to the Responses API where the gate lets it; null: opted out',
    }),
  ),
  cache: CacheTelemetrySchema,
  notices: Type.Array(Type.String()),
};

const description =
  'The status as the conversation workflow last published it (a stored snapshot: one written by an older version ' +
  'may lack newer fields; additional fields are kept)';

/** A conversation status as the workflow publishes it (chat turn results carry it). */
export const ConversationStatusBody = snapshot(
  Type.Object(statusProperties, { description, additionalProperties: true }),
);
export type ConversationStatusBody = Static<typeof ConversationStatusBody>;
export type StatusMatchesContract = Assert<Same<ConversationStatusBody, ConversationStatus>>;

/** The status the gateway reports: the workflow's snapshot and the log's own counters. */
export const PublishedStatus = snapshot(
  Type.Object(
    {
      ...statusProperties,
      /** Batches accepted so far; `appliedSeq` says how many of them have been decided on. */
      batchSeq: count,
      /** False until the workflow published its first snapshot (thresholds are then unknown). */
      published: Type.Boolean(),
    },
    { description, additionalProperties: true },
  ),
);
export type PublishedStatus = Static<typeof PublishedStatus>;
