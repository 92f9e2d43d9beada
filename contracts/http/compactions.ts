// HTTP contract of the compaction routes (workers/gateway/routes/compactions.ts, tenant key): the list by status and
// the replay of a compaction that used the fallback summary (SPEC §13.7).

import { type Static, Type } from 'typebox';
import {
  COMPACTION_STATUSES,
  COMPACTION_SUMMARY_BACKENDS,
  COMPACTION_TRIGGERS,
  NATIVE_FALLBACK_REASONS,
  type StoredStats,
} from '../compaction.js';
import type { ReplayResult as ReplayResultContract } from '../compactionActivities.js';
import { type Assert, isoDateTime, MAX_OFFSET, nullable, openObject, type Same, stringEnum } from './common.js';

const statusList = `^(${COMPACTION_STATUSES.join('|')})(,(${COMPACTION_STATUSES.join('|')}))*$`;

export const DEFAULT_COMPACTIONS_LIMIT = 50;

export const ListCompactionsQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ pattern: statusList })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: DEFAULT_COMPACTIONS_LIMIT })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 })),
  },
  { additionalProperties: false },
);
export type ListCompactionsQuery = Static<typeof ListCompactionsQuery>;

export const CompactionParams = Type.Object({ compactionId: Type.String({ format: 'uuid' }) });

export const CompactionSummary = Type.Object({
  id: Type.String(),
  conversationId: Type.String(),
  sessionId: Type.String(),
  seq: Type.Integer(),
  trigger: stringEnum(COMPACTION_TRIGGERS),
  status: stringEnum(COMPACTION_STATUSES),
  replayable: Type.Boolean({ description: 'Used the fallback summary: POST …/replay regenerates it' }),
  failureClass: nullable(Type.String()),
  error: nullable(Type.String()),
  attempts: Type.Integer(),
  summaryBackend: nullable(
    stringEnum(COMPACTION_SUMMARY_BACKENDS, {
      description: 'Who wrote the committed summary: the LLM summariser, the extractive summariser, the §9.5 fallback',
    }),
  ),
  retentionBefore: nullable(
    Type.Number({
      description:
        "Quality gate of an LLM summary (issue #15 §3): share of the window's pinned identifiers and user " +
        "constraints in the model's summary; null when no gate ran",
    }),
  ),
  retentionAfter: nullable(
    Type.Number({ description: 'The same share in the committed summary, after the re-prompt and the append' }),
  ),
  nativeFallback: nullable(
    stringEnum(NATIVE_FALLBACK_REASONS, {
      description:
        'summary_backend anthropic_native (SPEC §19): why the local summariser wrote the summary instead of a ' +
        'compaction block; null when a block did, or when the backend was not asked for',
    }),
  ),
  summaryUsage: nullable(
    Type.Object(
      {
        inputTokens: Type.Integer(),
        outputTokens: Type.Integer(),
        cacheReadTokens: Type.Integer(),
        cacheWriteTokens: Type.Integer(),
      },
      { description: "What a provider-side summary cost (the compaction entries of Anthropic's usage.iterations)" },
    ),
  ),
  engine: Type.String({
    description:
      "The context engine that compressed (SPEC §10.3): 'compressor' (the built-in phases) or the plugin or " +
      'registered engine named by context.engine',
  }),
  engineFallback: nullable(
    Type.String({
      description:
        'Why the built-in compressor did the work although context.engine named another engine (the §10.3 line: not ' +
        'found, failed to load, failed to compress, or a result the host refused); null otherwise',
    }),
  ),
  cacheRewriteTokens: nullable(
    Type.Integer({ description: 'Input tokens the first request after the compaction wrote to the prompt cache' }),
  ),
  cacheRecoveryTurns: nullable(Type.Integer({ description: 'Turns after the compaction until cache reads recovered' })),
  stats: nullable(openObject<StoredStats>('SPEC §8.8 stats, with the commit and replay notes')),
  createdAt: isoDateTime,
  completedAt: nullable(isoDateTime),
});
export type CompactionSummary = Static<typeof CompactionSummary>;

export const CompactionList = Type.Object(
  { compactions: Type.Array(CompactionSummary) },
  { description: 'Compactions, newest first' },
);
export type CompactionList = Static<typeof CompactionList>;

export const ReplayResult = Type.Object(
  {
    compactionId: Type.String(),
    status: stringEnum(['replaced', 'recorded', 'failed'], {
      description:
        'replaced: the new summary replaced the fallback in the live transcript; recorded: kept in the record ' +
        'only (no longer the latest compaction); failed: the summarizer failed again (see error)',
    }),
    reason: nullable(Type.String()),
    summaryBody: nullable(Type.String()),
    error: nullable(Type.String()),
  },
  { description: 'What the replay did' },
);
export type ReplayResult = Static<typeof ReplayResult>;
export type ReplayResultMatchesContract = Assert<Same<ReplayResult, ReplayResultContract>>;
