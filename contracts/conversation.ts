// The conversation's vocabulary (DESIGN.md §2 contracts/): what clients send (batches, chat turns, manual compaction,
// model switches), what they get back (the compaction report, turn results, the status) and the workflow's input and
// carried state. Pure types, safe in the workflow bundle; the workflow's signals and updates carrying them are in
// workflows/definitions.ts.
import type {
  CacheTtl,
  ChatMessage,
  CompressionConfig,
  CompressionStats,
  CompressorState,
  HostPolicy,
  TurnUsage,
  Usage,
} from '../engine/index.js';
import type { CompactionStatus, CompactionTimeouts, CompactionTrigger, SummaryRetention } from './compaction.js';
import type { NotificationFold, StoredBatch } from './conversationLog.js';

/** One incoming message with the client's idempotency key (unique per conversation; a repeat is a no-op). */
export interface IncomingMessage {
  message: ChatMessage;
  idempotencyKey: string;
}

/** A batch of messages, in order. `usage` is the provider's usage of the response that produced the assistant
 * message(s) of the batch (chat backend runs elsewhere: the client reports what the model said and cost). */
export interface SubmitMessages {
  messages: IncomingMessage[];
  usage?: Usage;
  /**
   * The batch's last assistant message came with a native checkpoint (SPEC §15.1): set by the gateway's drop-in
   * Responses endpoint (then `usage` is absent: that reading is no verdict), never taken from a client's body.
   */
  nativeCheckpoint?: boolean;
}

/** What one compaction did, as the conversation workflow and the manual-compress update report it. */
export interface CompactionResult {
  compactionId: string;
  trigger: CompactionTrigger;
  status: CompactionStatus;
  /** SPEC §16.5 notice for the user (no-op texts, abort, fallback), when there is one. */
  notice: string | null;
  noopReason: string | null;
  sessionId: string;
  stats: CompressionStats | null;
  /** The quality gate's retention shares of an LLM summary (issue #15 §3); null otherwise. */
  retention: SummaryRetention | null;
  error: string | null;
}

/** An automatic compaction that runs while the conversation goes on (SPEC §19 `background`, DESIGN.md §3). */
export interface BackgroundCompaction {
  compactionId: string;
  seq: number;
  trigger: CompactionTrigger;
  /** ISO time the compaction started. */
  startedAt: string;
}

export interface CompactRequest {
  focusTopic?: string;
  /** Set by the gateway: the quiet batches to apply before the compaction. */
  notification?: NotificationFold;
}

export interface SwitchModelRequest {
  model: string;
  provider?: string;
  /** Explicit window (like `model.context_length`); otherwise resolved from the registry (SPEC §4.1). */
  contextLength?: number;
  /** Set by the gateway: the quiet batches to apply before the switch. */
  notification?: NotificationFold;
}

/** Chat backend mode: the system runs the agent turn. The client's messages (the user message, or the results of
 * the tool calls the last reply asked for) are already stored; the reply is stored, then referenced by id. */
export interface ChatTurnRequest {
  /** Derived from the conversation and the batch's idempotency keys: a retried request is the same turn. */
  turnId: string;
  /** The stored batch of the request (`seq: null` when every message of it was stored before). */
  batch: StoredBatch;
  /** OpenAI-shaped function tools offered to the model. */
  tools?: ChatTool[];
  /** A client streams the turn: the model call publishes the reply's text as it is written (infra/db/turnText.ts). */
  relay?: boolean;
  /** A drop-in client's turn: the reply is keyed as that dialect keys its history (infra/db/historyKeys.ts). */
  replyKey?: ReplyKey;
}

/** Where a reply sits in a drop-in dialect's history: the key prefix and its position (SPEC §15.2 drop-in turns). */
export interface ReplyKey {
  prefix: string;
  position: number;
}

/** Token usage of one model call. `prompt_tokens` is the whole input: uncached + cache reads + cache writes. */
export type { TurnUsage };

/** An OpenAI chat-completions function tool (converted for Anthropic by the provider adapter). */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface TurnResult {
  turnId: string;
  /** The stored reply (the message itself is read from PostgreSQL, never carried in workflow history). */
  replyMessageId: number;
  finishReason: string | null;
  usage: TurnUsage;
  /** Set when the reply's usage triggered a compaction before the next call (SPEC §7.6). */
  compaction: CompactionResult | null;
  status: ConversationStatus;
}

/**
 * What the chat-turn update returns: the turn without the status. Every completed update's outcome is recorded in
 * the workflow's history, so the status, read from PostgreSQL where the workflow published it before answering,
 * stays out of it. Outcomes recorded before carried it too.
 */
export type TurnOutcome = Omit<TurnResult, 'status'>;

/** Cache economics (issue: LLM providers §4): totals over the turns the system ran, and per compaction. */
export interface CacheTelemetry {
  turns: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  uncachedInputTokens: number;
  lastTurn: TurnUsage | null;
  /** The compaction whose cache recovery is being measured, with what was seen so far. */
  watching: { compactionId: string; turnsSince: number; rewriteTokens: number | null } | null;
  /** The last measured compaction: tokens re-written by the first request after it, turns until reads recovered. */
  lastRecovery: CacheRecovery | null;
}

/** A finished cache-recovery measurement of a compaction (also on its record). */
export interface CacheRecovery {
  compactionId: string;
  rewriteTokens: number;
  recoveryTurns: number;
}

export interface ConversationStatus {
  tenantId: string;
  conversationId: string;
  sessionId: string;
  model: string;
  provider: string | null;
  contextLength: number;
  thresholdPercent: number;
  thresholdTokens: number;
  lastPromptTokens: number;
  /** Tokens the next request is estimated to carry (last reading + estimate of what came after it). */
  contextTokens: number;
  usagePercent: number;
  compressionCount: number;
  activeMessages: number;
  ineffectiveStrikes: number;
  fallbackStreak: number;
  blockedBy: 'cooldown' | 'structural_backoff' | 'ineffective' | null;
  /** Why automatic in-loop compaction is paused by the host (SPEC §19 breakers), or null. */
  autoPaused: AutoPause | null;
  /** Automatic compactions committed in the last hour (the frequency breaker's count). */
  autoCompactionsLastHour: number;
  trippedUntil: string | null;
  summaryCooldownUntil: string | null;
  structuralBackoffUntil: string | null;
  hygieneCooldownUntil: string | null;
  policyVersion: number;
  pendingItems: number;
  processedBatches: number;
  /** Every decision due for the batches up to this one has been taken. */
  appliedSeq: number;
  lastCompaction: CompactionResult | null;
  /** The automatic compaction running in the background (SPEC §19 `background`), or null. */
  compacting: BackgroundCompaction | null;
  /** SPEC §12.1: whether prompt caching is on for the current model and provider, and why. */
  promptCaching: { enabled: boolean; reason: string; line: string };
  /**
   * SPEC §15.1: the `compact_threshold` a Responses request of this conversation sends where the gate lets it (the
   * opt-in `compression.codex_responses_native` is on), else null. The rest of the gate is checked per request.
   */
  nativeCompactThreshold: number | null;
  cache: CacheTelemetry;
  notices: string[];
}

/**
 * Why automatic in-loop compaction is paused: the SPEC §19 breakers, or `client` — the drop-in client compacts this
 * conversation itself (issue #12), so the server does not compact on top of it (the safety net still applies).
 */
export const AUTO_PAUSES = ['frequency', 'tenant_frequency', 'fixed_point', 'client'] as const;
export type AutoPause = (typeof AUTO_PAUSES)[number];

/**
 * A drop-in client's own compaction, committed by the gateway (content-free): its record, the new session of the
 * conversation holding what the client sends from now on, and the conversation's version and totals after it.
 */
export interface ClientCompaction {
  compactionId: string;
  sessionId: string;
  version: number;
  activeMessages: number;
  activeTokens: number;
}

// ---------------------------------------------------------------------------------------------------------------
// The conversation workflow's input and the compact state it carries through continue-as-new (DESIGN.md §3).

export interface ConversationInput {
  tenantId: string;
  conversationId: string;
  model: string;
  provider?: string | null;
  /** Explicit window (model.context_length); otherwise resolved from the registry (SPEC §4.1). */
  contextLength?: number | null;
  source?: string;
  title?: string | null;
  /** Test and operations knobs; defaults are the spec's. */
  timeouts?: Partial<CompactionTimeouts>;
  /** How long a missing batch notification is waited for before its sequence number counts as applied (ms). */
  gapWaitMs?: number;
  /** Present after continue-as-new. */
  carried?: CarriedState;
}

/** Which batches the workflow has taken its decisions for (their sequence numbers, DESIGN.md §3). */
export interface AppliedBatches {
  /** Every batch up to this one is applied. */
  appliedSeq: number;
  /** Applied batches above `appliedSeq` (their notifications arrived out of order). */
  ahead: number[];
  /** The highest sequence number the workflow knows to exist. */
  latestSeq: number;
}

/** The compact state carried through continue-as-new: ids, counters, engine state, last usage; no transcript. */
export interface CarriedState {
  sessionId: string;
  config: CompressionConfig;
  host: HostPolicy;
  policyVersion: number;
  cacheTtl: CacheTtl | null;
  compressor: CompressorState;
  compactionSeq: number;
  turnSeq: number;
  /** The freshest known totals of the live transcript and the conversation version they belong to. */
  version: number;
  activeMessages: number;
  activeTokens: number;
  /** Live tokens when the last real reading was taken, not counting the rows that came with it (SPEC §7.6). */
  readingBaseTokens: number;
  /**
   * The newest native checkpoint the next request starts from (SPEC §15.1): the live tokens and messages its items
   * stand in for. Until the next real reading the estimate counts only what came after it, and its messages never
   * count toward the hygiene message limit. Cleared by a local or client compaction and a model switch.
   */
  nativeBase?: { tokens: number; messages: number } | null;
  /** The version right after the latest committed compaction: a reading of a batch accepted before it predates it. */
  lastCommitVersion: number;
  batches: AppliedBatches;
  /** An automatic compaction ran and no model call happened since (SPEC §7.6: at most one between two calls). */
  autoSinceModelCall: boolean;
  /** Workflow times (ms) of the automatic compactions committed in the last hour (SPEC §19 frequency breaker). */
  autoTimes: number[];
  /** Why automatic in-loop compaction is paused now (its notice was shown once), or null. */
  autoPaused: AutoPause | null;
  /** A real user message arrived since the last committed compaction (SPEC §19 fixed-point detector). */
  userSinceCompaction: boolean;
  hygieneCooldownUntil: number | null;
  contextLength: number;
  model: string;
  provider: string | null;
  processedBatches: number;
  lastCompaction: CompactionResult | null;
  notices: string[];
  lastCommittedCompactionId: string | null;
  cache: CacheTelemetry;
  runs: number;
  /** The latest notification epoch seen (quiet batches, migration 0009); absent in states carried before it. */
  notifyEpoch?: number;
  /**
   * Who owns the context (SPEC §15.2): `codex_app_server` — a Codex app-server thread; the local compressor keeps
   * out and the host only records the app-server's compactions. Absent or null: this host's compressor.
   */
  runtime?: ConversationRuntime | null;
}

/** A conversation whose context another agent owns (SPEC §15.2 API mode `codex_app_server`). */
export type ConversationRuntime = 'codex_app_server';
