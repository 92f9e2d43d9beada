// The built-in context engine (SPEC §7, §8, §10.2): its state machine — triggers, readings, cooldowns, anti-thrash.
// `compress()` composes the pure phase functions of ./phases.ts (compressPipeline.ts); the state-update methods (`beginCompaction`, `record*`) are public so that a host that runs the
// phases elsewhere (Temporal activities) applies their outcome through the same code.
import type { NoopReason } from './boundaries.js';
import { computeMaxSummaryTokens, computeTailTokenBudget } from './budgets.js';
import {
  type CompressorState,
  evaluateTrip,
  INITIAL_COMPRESSOR_STATE,
  isActive,
  normalizeCompressorState,
} from './compressorState.js';
import { compressTranscript } from './compressPipeline.js';
import { type CompressionConfig, normalizeCompressionConfig } from './config.js';
import { STRUCTURAL_BACKOFF_S, SUMMARY_FAILURE_COOLDOWN_S } from './constants.js';
import type { SummaryFailureClass } from './fallbackSummary.js';
import { type CompactionLimits, unchangedStats } from './phases.js';
import { deriveThresholds } from './thresholds.js';
import type {
  ChatMessage,
  CompressionStats,
  CompressOptions,
  ContextEngine,
  EngineStatus,
  Summarizer,
  Usage,
} from './types.js';

export interface ContextCompressorOptions {
  model: string;
  contextLength: number;
  provider?: string;
  config?: Partial<CompressionConfig>;
  summarize: Summarizer;
  /** Clock in ms since the epoch; workflow time inside workflows (§7.5). */
  now?: () => number;
  /** State carried over from an earlier instance (§13.4). */
  state?: Partial<CompressorState>;
}

export type BlockingReason = 'cooldown' | 'structural_backoff' | 'ineffective';

/** Outcome of a compaction that committed a summary (LLM or fallback), for `recordCompaction`. */
export interface CompactionRecord {
  summaryBody: string;
  fallbackUsed: boolean;
  /** Whether the summarizer was actually called (a failed call sets the cooldown). */
  summarizerCalled: boolean;
  /** Failure class when the fallback was used. */
  failureClass?: SummaryFailureClass;
  stats?: CompressionStats;
}

interface Derived {
  thresholdPercent: number;
  thresholdTokens: number;
  tailTokenBudget: number;
  maxSummaryTokens: number;
}

const MS = 1000;

function finiteOrZero(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function positiveReading(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null;
}

export class ContextCompressor implements ContextEngine {
  readonly name = 'compressor' as const;
  readonly config: CompressionConfig;
  private readonly summarize: Summarizer;
  private readonly now: () => number;
  private state: CompressorState;
  private derived!: Derived;
  private currentModel!: string;
  private currentContextLength!: number;
  private currentProvider: string | undefined;
  private stats: CompressionStats | null = null;
  private summaryFailure: SummaryFailureClass | null = null;

  constructor(options: ContextCompressorOptions) {
    this.config = normalizeCompressionConfig(options.config);
    this.summarize = options.summarize;
    this.now = options.now ?? (() => Date.now());
    this.state = normalizeCompressorState(options.state ?? INITIAL_COMPRESSOR_STATE);
    this.derive(options.model, options.contextLength, options.provider);
  }

  get model(): string {
    return this.currentModel;
  }
  get contextLength(): number {
    return this.currentContextLength;
  }
  get provider(): string | undefined {
    return this.currentProvider;
  }
  get thresholdPercent(): number {
    return this.derived.thresholdPercent;
  }
  get thresholdTokens(): number {
    return this.derived.thresholdTokens;
  }
  get tailTokenBudget(): number {
    return this.derived.tailTokenBudget;
  }
  get maxSummaryTokens(): number {
    return this.derived.maxSummaryTokens;
  }
  get compressionCount(): number {
    return this.state.compressionCount;
  }
  get lastStats(): CompressionStats | null {
    return this.stats;
  }
  /** Failure class of the last compress() whose summary failed, null after a successful summary. */
  get lastSummaryFailure(): SummaryFailureClass | null {
    return this.summaryFailure;
  }
  get previousSummary(): string | null {
    return this.state.previousSummary;
  }
  set previousSummary(value: string | null) {
    this.state.previousSummary = typeof value === 'string' ? value : null;
  }

  /** Plain-JSON copy of the state of §7.1. */
  exportState(): CompressorState {
    return { ...this.state };
  }

  /** Replace the state (lenient, §13.4). */
  restoreState(state: Partial<CompressorState>): void {
    this.state = normalizeCompressorState(state);
  }

  private derive(model: string, contextLength: number, provider: string | undefined): void {
    this.currentModel = model;
    this.currentContextLength = contextLength;
    this.currentProvider = provider;
    const { thresholdPercent, thresholdTokens } = deriveThresholds({
      model,
      contextLength,
      provider,
      config: this.config,
    });
    this.derived = {
      thresholdPercent,
      thresholdTokens,
      tailTokenBudget: computeTailTokenBudget(contextLength, thresholdTokens, this.config),
      maxSummaryTokens: computeMaxSummaryTokens(contextLength),
    };
  }

  /** §4.6, §7.5: re-derive from the raw configuration; reset the anti-thrash state. */
  updateModel(model: string, contextLength: number, provider?: string): void {
    this.derive(model, contextLength, provider === undefined ? this.currentProvider : provider);
    Object.assign(this.state, {
      ineffectiveStrikes: 0,
      fallbackStreak: 0,
      trippedUntil: null,
      summaryCooldownUntil: null,
      structuralBackoffUntil: null,
      awaitingVerdict: false,
    });
  }

  /** Why automatic compaction is refused right now (§7.2 rules 3–5), without the probe bookkeeping. */
  blockingReason(): BlockingReason | null {
    const now = this.now();
    if (isActive(this.state.summaryCooldownUntil, now)) return 'cooldown';
    if (isActive(this.state.structuralBackoffUntil, now)) return 'structural_backoff';
    if (isActive(this.state.trippedUntil, now)) return 'ineffective';
    return null;
  }

  /** §7.2. */
  shouldCompress(promptTokens?: number): boolean {
    const tokens = finiteOrZero(promptTokens === undefined ? this.state.lastPromptTokens : promptTokens);
    if (tokens < this.thresholdTokens) return false;
    if (this.blockingReason() !== null) return false;
    if (this.state.trippedUntil !== null) this.startRecoveryProbe();
    return true;
  }

  private startRecoveryProbe(): void {
    this.state.trippedUntil = null;
    this.state.ineffectiveStrikes = Math.min(this.state.ineffectiveStrikes, 1);
    this.state.fallbackStreak = Math.min(this.state.fallbackStreak, 1);
  }

  /** §7.3. */
  updateFromResponse(usage: Usage): void {
    const prompt = positiveReading(usage?.prompt_tokens);
    const completion = positiveReading(usage?.completion_tokens);
    const total = positiveReading(usage?.total_tokens);
    if (completion !== null) this.state.lastCompletionTokens = completion;
    if (total !== null) this.state.lastTotalTokens = total;
    if (prompt !== null) this.recordReading(prompt);
    evaluateTrip(this.state, this.now());
  }

  private recordReading(prompt: number): void {
    const overThreshold = prompt >= this.thresholdTokens;
    this.state.lastPromptTokens = prompt;
    if (this.state.awaitingVerdict) {
      this.state.awaitingVerdict = false;
      this.state.ineffectiveStrikes = overThreshold ? this.state.ineffectiveStrikes + 1 : 0;
    } else if (!overThreshold) {
      this.state.ineffectiveStrikes = 0;
    }
  }

  /** §7.7. */
  getStatus(): EngineStatus {
    const last = Math.max(0, this.state.lastPromptTokens);
    const ctx = this.currentContextLength;
    return {
      last_prompt_tokens: last,
      threshold_tokens: this.thresholdTokens,
      context_length: ctx,
      usage_percent: ctx ? Math.min(100, (last / ctx) * 100) : 0,
      compression_count: this.state.compressionCount,
    };
  }

  /** Inputs of `planCompaction` for this engine. */
  compactionLimits(): CompactionLimits {
    return {
      protectFirstN: this.config.protectFirstN,
      protectLastN: this.config.protectLastN,
      minTailUserMessages: this.config.minTailUserMessages,
      tailTokenBudget: this.tailTokenBudget,
      previousSummary: this.state.previousSummary,
    };
  }

  /** S0 (§7.5): `force` clears the summary cooldown and the structural backoff. */
  beginCompaction(options: { force?: boolean } = {}): void {
    if (options.force !== true) return;
    this.state.summaryCooldownUntil = null;
    this.state.structuralBackoffUntil = null;
  }

  /** §8.5.6 / §9.3: while true the summarizer is not called (failure class `cooldown`). */
  summaryCooldownActive(): boolean {
    return isActive(this.state.summaryCooldownUntil, this.now());
  }

  private startSummaryCooldown(): void {
    this.state.summaryCooldownUntil = this.now() + SUMMARY_FAILURE_COOLDOWN_S * MS;
  }

  /** S9 after a compaction (§7.5, §8.8, §18.10). */
  recordCompaction(record: CompactionRecord): void {
    const s = this.state;
    if (record.fallbackUsed && record.summarizerCalled) this.startSummaryCooldown();
    s.compressionCount += 1;
    s.previousSummary = record.summaryBody;
    s.lastPromptTokens = 0;
    s.awaitingVerdict = true;
    s.structuralBackoffUntil = null;
    if (record.fallbackUsed) {
      s.fallbackStreak += 1;
      this.summaryFailure = record.failureClass ?? this.summaryFailure;
    } else {
      s.fallbackStreak = 0;
      s.summaryCooldownUntil = null;
      this.summaryFailure = null;
    }
    evaluateTrip(s, this.now());
    if (record.stats !== undefined) this.stats = record.stats;
  }

  /**
   * A compaction that was not committed because it did not make the transcript smaller (the host's minimum-gain
   * rule, SPEC §19): it counts as an ineffective strike (§7.4), so two in a row trip the guard.
   */
  recordIneffective(): void {
    this.state.ineffectiveStrikes += 1;
    evaluateTrip(this.state, this.now());
  }

  /** S9 after a no-op (§8.1, §7.5): structural backoff. `tokensBefore` = estimate of the input (stats). */
  recordNoop(reason: NoopReason, tokensBefore = 0): void {
    this.state.structuralBackoffUntil = this.now() + STRUCTURAL_BACKOFF_S * MS;
    evaluateTrip(this.state, this.now());
    this.stats = unchangedStats(tokensBefore, { noop: reason });
  }

  /** S9 after an abort (§9.4): only the cooldown, when the summarizer was called. */
  recordAbort(summarizerCalled: boolean, tokensBefore = 0, failureClass?: SummaryFailureClass): void {
    if (summarizerCalled) this.startSummaryCooldown();
    if (failureClass !== undefined) this.summaryFailure = failureClass;
    evaluateTrip(this.state, this.now());
    this.stats = unchangedStats(tokensBefore, { aborted: true });
  }

  /** §8.1 S0–S9 (compressPipeline.ts). */
  compress(messages: readonly ChatMessage[], options: CompressOptions = {}): Promise<ChatMessage[]> {
    return compressTranscript(this, this.summarize, messages, options);
  }
}
