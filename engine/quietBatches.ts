// Quiet batches (issue #11 §2: Temporal only where it decides something). The conversation workflow publishes the
// rules below with its state; the gateway judges each committed batch against them and tells the workflow only
// about batches that could change a decision. A quiet batch is folded (its effect on the state, summed) and the fold
// travels with the next notification, where the workflow applies it before that notification's own decisions.
// The rules are conservative: they ignore every brake (cooldowns, breakers, pauses, "one compaction per model call"),
// so a batch they call quiet makes no decision whatever the brakes say; a loud batch that decides nothing only costs
// a notification. Pure: the workflow, the gateway and the property test share these functions.

import type { CompressorState } from './compressorState.js';
import { TRIP_STRIKES } from './constants.js';
import { gatewayHygieneDecision } from './hygiene.js';
import type { TurnUsage, Usage } from './types.js';

/** What the workflow publishes: valid while `epoch` equals the conversation's notification epoch in the log. */
export interface QuietRules {
  /** The conversation's notification epoch the workflow's state has seen (every notification bumps it). */
  epoch: number;
  enabled: boolean;
  contextLength: number;
  thresholdTokens: number;
  hardMessageLimit: number;
  /**
   * A usage reading below the threshold may wait for the next notification: it sets the reading and clears the
   * strikes (a verdict below the threshold too, SPEC §7.3/§7.4) the same way later as now — unless the guard would
   * trip on it, at a time that depends on when it is applied.
   */
  usageQuiet: boolean;
  /**
   * False while automatic compaction is paused at a fixed point: a user message lifts the pause (SPEC §19). No
   * decision depends on it before the next notification, but the published status shows the pause lifted at once.
   */
  usersQuiet: boolean;
  lastPromptTokens: number;
  readingBaseTokens: number;
  /**
   * The native checkpoint the next request starts from (SPEC §15.1; CarriedState.nativeBase): the live tokens and
   * messages it stands in for. Absent: none.
   */
  nativeBase?: { tokens: number; messages: number };
  /**
   * SPEC §15.1: the `compact_threshold` of the conversation's Responses requests where the gate lets it (absent: not
   * opted in). Decides nothing here; published with the rules so that every request path has it from the start.
   */
  nativeCompactThreshold?: number;
  /**
   * A chat turn may run in the gateway, its batches judged by these rules (absent in rules published before such
   * turns existed: no). False when automatic compaction blocks (SPEC §19 `background: false`: a turn's reply waits
   * for it) and while a compaction runs unless the workflow folds at its settlement (`foldsAtSettle`). A cache
   * recovery being measured needs the folded turns in order: QuietTurns keeps what it needs of them.
   */
  turnsQuiet?: boolean;
  /**
   * A chat turn may run in the gateway with its batches notified, not folded, when the workflow's decisions on its
   * batch cannot change what the model is sent (no hygiene compaction, SPEC §11): SPEC §19 `background` is on, so
   * the in-loop checks at most start a background compaction (absent in older rules: no).
   */
  gatewayTurns?: boolean;
  /**
   * Published while a background compaction runs. Alone: no batch is quiet (absent in older rules, then null meant
   * it). With `foldsAtSettle`: batches may be quiet as at any other time.
   */
  compacting?: boolean;
  /**
   * With `compacting`: the workflow applies the quiet batches committed while the compaction runs before it applies
   * the compaction's outcome (ConversationEntity, patch `fold-at-settle`), so they are applied in the order they
   * were committed. The in-loop checks start nothing while one runs; hygiene, a reading at or over the threshold
   * (unless `overQuiet`), a guard trip and a pause lift still make a batch loud (absent in older rules: no).
   */
  foldsAtSettle?: boolean;
  /**
   * With `foldsAtSettle`: a reading at or over the threshold may be quiet too. No verdict is awaited and no strike
   * stands (SPEC §7.3/§7.4), so such a reading sets the reading and nothing else — no strike, no in-loop check (one
   * compaction runs) — and the fold's latest reading, applied before the settlement, leaves the state as the readings
   * applied one by one would (a reading below the threshold among them clears no strike that is not there). A chat
   * over its threshold while its compaction runs reports such a reading on every turn (absent in older rules: no).
   */
  overQuiet?: boolean;
}

/**
 * The chat turns of quiet batches (their replies' usage): counted and summed for the status telemetry, with what a
 * cache-recovery measurement after a compaction needs of them in order (workflows/conversation/cacheTelemetry.ts).
 */
export interface QuietTurns {
  turns: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  uncachedInputTokens: number;
  lastTurn: TurnUsage;
  /** The first turn's cache writes (a measurement's rewrite, when it is the first turn after the compaction). */
  firstCacheWrite?: number;
  /** 1-based: the first of these turns whose cache reads recovered (cacheRecovered); absent: none did. */
  recoveredAt?: number;
}

/** A turn whose cache reads cover at least this share of its prompt counts as "cache recovered" after a compaction. */
export const CACHE_RECOVERED_SHARE = 0.5;

/** Whether a turn's cache reads reached CACHE_RECOVERED_SHARE of its prompt. */
export function cacheRecovered(usage: TurnUsage): boolean {
  return usage.prompt_tokens > 0 && usage.cache_read_tokens >= CACHE_RECOVERED_SHARE * usage.prompt_tokens;
}

/** The summed effect of the quiet batches since the last notification (StoredBatch fields only, no content). */
export interface QuietFold {
  fromSeq: number;
  toSeq: number;
  batches: number;
  users: number;
  freshAssistant: boolean;
  /** Totals after the last quiet batch. */
  version: number;
  activeMessages: number;
  activeTokens: number;
  /** Merged usage of the quiet batches' responses (each field: its last positive value), when any had one. */
  usage: Usage | null;
  usageVersion: number;
  readingBaseTokens: number;
  /** Chat turns the gateway ran among the quiet batches (absent: none). */
  turns?: QuietTurns;
}

/** The fields of a committed batch the rules look at (a StoredBatch is one). */
export interface QuietBatchView {
  seq: number | null;
  version: number;
  activeMessages: number;
  activeTokens: number;
  users: number;
  freshAssistant: boolean;
  incoming: { rows: number; tokens: number } | null;
  usage?: Usage;
  usageTailTokens?: number;
  /** The batch is the reply of a chat turn the gateway ran (its usage with the cache economics). */
  turn?: TurnUsage;
  /** With `turn`: the version its context was read at (a later commit voids the reading). */
  readVersion?: number;
  /** With `turn`: the reply came with a native checkpoint (SPEC §15.1): the workflow must hear of it. */
  nativeCheckpoint?: boolean;
}

const positive = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null;

/**
 * The rules for the workflow's current state. While a compaction runs, every batch must be notified unless the
 * workflow applies the fold before it settles the compaction (`foldsAtSettle`).
 */
export function quietRulesOf(input: {
  epoch: number;
  enabled: boolean;
  contextLength: number;
  thresholdTokens: number;
  hardMessageLimit: number;
  compressor: CompressorState;
  readingBaseTokens: number;
  compacting: boolean;
  foldsAtSettle: boolean;
  pausedAtFixedPoint: boolean;
  turnsQuiet: boolean;
  gatewayTurns: boolean;
  nativeBase?: { tokens: number; messages: number } | null;
  nativeCompactThreshold?: number | null;
}): QuietRules {
  const s = input.compressor;
  const folds = input.compacting && input.foldsAtSettle;
  const overQuiet = folds && !s.awaitingVerdict && s.ineffectiveStrikes === 0;
  return {
    ...(input.compacting ? { compacting: true } : {}),
    ...(folds ? { foldsAtSettle: true } : {}),
    ...(overQuiet ? { overQuiet: true } : {}),
    epoch: input.epoch,
    enabled: input.enabled,
    contextLength: input.contextLength,
    thresholdTokens: input.thresholdTokens,
    hardMessageLimit: input.hardMessageLimit,
    usageQuiet: !(s.fallbackStreak >= TRIP_STRIKES && s.trippedUntil === null),
    usersQuiet: !input.pausedAtFixedPoint,
    lastPromptTokens: s.lastPromptTokens,
    readingBaseTokens: input.readingBaseTokens,
    turnsQuiet: input.turnsQuiet && (!input.compacting || folds),
    gatewayTurns: input.gatewayTurns,
    ...(input.nativeBase ? { nativeBase: { ...input.nativeBase } } : {}),
    ...(typeof input.nativeCompactThreshold === 'number'
      ? { nativeCompactThreshold: input.nativeCompactThreshold }
      : {}),
  };
}

/** The reading the workflow holds after the fold (SPEC §3.4: last real reading + what came after it). */
function readingAfter(rules: QuietRules, fold: QuietFold | null): { lastPromptTokens: number; base: number } {
  const prompt = positive(fold?.usage?.prompt_tokens);
  return {
    lastPromptTokens: prompt ?? rules.lastPromptTokens,
    base: fold?.usage ? fold.readingBaseTokens : rules.readingBaseTokens,
  };
}

/**
 * True when the batch, applied after the fold, can make no decision: no post-response check that could trigger or
 * give a verdict (SPEC §7.3, §7.6), no gateway hygiene (SPEC §11.2), no preflight trigger for an incoming message
 * (or before the model call of a chat turn, `turnFollows`), no pause to lift.
 */
export function isQuiet(
  rules: QuietRules,
  fold: QuietFold | null,
  batch: QuietBatchView,
  options: { turnFollows?: boolean } = {},
): boolean {
  const turnFollows = options.turnFollows === true;
  const compacting = rules.compacting === true;
  if (batch.nativeCheckpoint === true) return false;
  if (compacting && rules.foldsAtSettle !== true) return false;
  if ((turnFollows || batch.turn) && rules.turnsQuiet !== true) return false;
  if (batch.users > 0 && !rules.usersQuiet) return false;
  const after = readingAfter(rules, fold);
  const base = after.base;
  let lastPromptTokens = after.lastPromptTokens;
  if (batch.usage) {
    if (!rules.usageQuiet) return false;
    // The post-response check looks at the reading after the response; a response without input tokens keeps
    // the previous one (SPEC §7.3), which may be over the threshold already.
    lastPromptTokens = positive(batch.usage.prompt_tokens) ?? lastPromptTokens;
    if (lastPromptTokens >= rules.thresholdTokens && !(compacting && rules.overQuiet === true)) return false;
  }
  if (!rules.enabled || (!batch.incoming && !turnFollows)) return true;
  // As the workflow judges it (workflows/conversation/state.ts hygieneHistory, contextTokens).
  const native = rules.nativeBase ?? { tokens: 0, messages: 0 };
  const hygiene = batch.incoming
    ? gatewayHygieneDecision({
        historyLength: Math.max(0, batch.activeMessages - batch.incoming.rows - native.messages),
        historyTokens: Math.max(
          0,
          batch.activeTokens - batch.incoming.tokens - (lastPromptTokens > 0 ? 0 : native.tokens),
        ),
        contextLength: rules.contextLength,
        lastPromptTokens,
        enabled: rules.enabled,
        hardMessageLimit: rules.hardMessageLimit,
      })
    : null;
  if (hygiene?.run) return false;
  // With a reading the workflow runs no preflight check (the reading is the newest measure, SPEC §7.6); while a
  // background compaction runs, none starts another (ConversationEntity.maybeCompact).
  if (batch.usage || compacting) return true;
  const context =
    lastPromptTokens > 0
      ? lastPromptTokens + Math.max(0, batch.activeTokens - base)
      : batch.activeTokens - native.tokens;
  return context < rules.thresholdTokens;
}

/** Adds a quiet batch to the fold. */
export function foldQuiet(fold: QuietFold | null, batch: QuietBatchView): QuietFold {
  const seq = batch.seq ?? fold?.toSeq ?? 0;
  const merged: Usage | null = batch.usage ? mergeUsage(fold?.usage ?? null, batch.usage) : (fold?.usage ?? null);
  return {
    fromSeq: fold?.fromSeq ?? seq,
    toSeq: seq,
    batches: (fold?.batches ?? 0) + (batch.seq === null ? 0 : 1),
    users: (fold?.users ?? 0) + batch.users,
    freshAssistant: (fold?.freshAssistant ?? false) || batch.freshAssistant,
    version: batch.version,
    activeMessages: batch.activeMessages,
    activeTokens: batch.activeTokens,
    usage: merged,
    usageVersion: batch.usage ? (batch.readVersion ?? batch.version) : (fold?.usageVersion ?? 0),
    readingBaseTokens: batch.usage ? batch.activeTokens - (batch.usageTailTokens ?? 0) : (fold?.readingBaseTokens ?? 0),
    ...foldTurns(fold?.turns, batch.turn),
  };
}

function foldTurns(before: QuietTurns | undefined, turn: TurnUsage | undefined): { turns?: QuietTurns } {
  if (!turn) return before ? { turns: before } : {};
  const turns = (before?.turns ?? 0) + 1;
  const recoveredAt = before?.recoveredAt ?? (cacheRecovered(turn) ? turns : undefined);
  return {
    turns: {
      turns,
      cacheReadTokens: (before?.cacheReadTokens ?? 0) + turn.cache_read_tokens,
      cacheWriteTokens: (before?.cacheWriteTokens ?? 0) + turn.cache_write_tokens,
      uncachedInputTokens: (before?.uncachedInputTokens ?? 0) + turn.uncached_input_tokens,
      lastTurn: turn,
      firstCacheWrite: before ? (before.firstCacheWrite ?? 0) : turn.cache_write_tokens,
      ...(recoveredAt === undefined ? {} : { recoveredAt }),
    },
  };
}

function mergeUsage(before: Usage | null, next: Usage): Usage {
  const pick = (key: keyof Usage) => positive(next[key]) ?? positive(before?.[key]);
  const out: Usage = {};
  for (const key of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) {
    const value = pick(key);
    if (value !== null) out[key] = value;
  }
  return out;
}

/** The reading the status shows while quiet batches are not yet known to the workflow. */
export function quietReading(rules: QuietRules, fold: QuietFold | null, activeTokens: number) {
  const { lastPromptTokens, base } = readingAfter(rules, fold);
  return {
    lastPromptTokens,
    contextTokens:
      lastPromptTokens > 0
        ? lastPromptTokens + Math.max(0, activeTokens - base)
        : activeTokens - (rules.nativeBase?.tokens ?? 0),
  };
}
