// Chat turns the gateway runs itself (issue #11 §2; workers/gateway/chatTurns.ts) when a turn's batch is not quiet
// (engine/quietBatches.ts) but nothing the workflow decides on it can change what the model is sent: the batch is
// notified first, and the model call does not wait for the workflow. Gateway hygiene (SPEC §11.2) is the one
// decision that could (the in-loop checks only start a background compaction, SPEC §19 `background`), so the turn
// may go when no hygiene can run, whatever reading the workflow holds when it gets to the batch. While the workflow
// has not published since the gateway's latest notifications, the gateway keeps what it notified since the rules
// (migration 0011) and judges by that. Pure: the gateway and the property test share these functions.
import { gatewayHygieneDecision } from './hygiene.js';
import { type QuietBatchView, type QuietFold, type QuietRules, quietReading } from './quietBatches.js';

/**
 * What the gateway notified since the rules of `epoch` were current (migration 0011): the batches up to `toSeq`,
 * the highest reading among them, and whether none of them could start a hygiene compaction.
 */
export interface NotifiedSince {
  epoch: number;
  toSeq: number;
  prompt: number;
  safe: boolean;
}

/** Where the log stands when a batch is judged: the rules are current, or what was notified since is known. */
export type RulesStanding = { current: true } | { current: false; since: NotifiedSince | null };

/** The notified batches since the rules, when they account for every batch before batch `seq`. */
function sinceFor(rules: QuietRules, standing: RulesStanding, seq: number | null): NotifiedSince | null {
  if (standing.current) return null;
  const since = standing.since;
  const chained = since !== null && since.epoch <= rules.epoch && since.toSeq === (seq ?? 0) - 1;
  return chained ? since : null;
}

/**
 * True when the rules may let a chat turn of batch `seq` run in the gateway: they are current, or what was notified
 * since them accounts for every batch before and none of it could start a hygiene compaction.
 */
export function rulesJudgeTurn(rules: QuietRules, standing: RulesStanding, seq: number | null): boolean {
  if (rules.gatewayTurns !== true) return false;
  return standing.current || sinceFor(rules, standing, seq)?.safe === true;
}

/**
 * Whether gateway hygiene (SPEC §11.2) could run on the batch, with any reading the workflow may hold when it
 * applies it: the rules' (after the fold), one notified since, the batch's own, or none (a compaction that settles
 * first leaves no reading: then the estimate counts).
 */
function hygieneMayRun(rules: QuietRules, fold: QuietFold | null, batch: QuietBatchView, notified: number): boolean {
  if (!rules.enabled || !batch.incoming) return false;
  const historyTokens = Math.max(0, batch.activeTokens - batch.incoming.tokens);
  const own = promptOf(batch);
  const bound = Math.max(quietReading(rules, fold, batch.activeTokens).lastPromptTokens, notified, own, historyTokens);
  return gatewayHygieneDecision({
    historyLength: Math.max(0, batch.activeMessages - batch.incoming.rows),
    historyTokens,
    contextLength: rules.contextLength,
    lastPromptTokens: bound,
    enabled: rules.enabled,
    hardMessageLimit: rules.hardMessageLimit,
  }).run;
}

/**
 * True when a chat turn whose batch is not quiet may still run in the gateway, the batch notified to the workflow
 * first: whatever the workflow then decides on it and on the batches notified before it — with any reading it may
 * hold by then, before or after a background compaction settles — no gateway hygiene can run, the one decision that
 * changes what the model is sent; the in-loop checks only start a background compaction (SPEC §19 `background`).
 * With rules that are not current, only while what was notified since them is known and none of it could. Unless a
 * compaction runs already, the batch's preflight check must not start one either: a compaction committed between
 * the turn's read and its reply would void the reading (StoredBatch.readVersion), where the workflow's own turn,
 * reading after that preflight, would have measured the compacted transcript.
 */
export function turnRunsWithoutWorkflow(
  rules: QuietRules,
  fold: QuietFold | null,
  batch: QuietBatchView,
  standing: RulesStanding = { current: true },
): boolean {
  if (!rulesJudgeTurn(rules, standing, batch.seq)) return false;
  const notified = sinceFor(rules, standing, batch.seq)?.prompt ?? 0;
  if (hygieneMayRun(rules, fold, batch, notified)) return false;
  return rules.compacting === true || !preflightMayTrigger(rules, fold, batch, notified);
}

/** Whether the preflight check (SPEC §7.6) could trigger on the batch, with the reading bounded as for hygiene. */
function preflightMayTrigger(rules: QuietRules, fold: QuietFold | null, batch: QuietBatchView, notified: number) {
  if (!rules.enabled) return false;
  const held = quietReading(rules, fold, batch.activeTokens).contextTokens;
  // A reading notified since the rules came with an unknown base: counted on top of the whole transcript.
  const context = notified > 0 ? Math.max(held, notified + batch.activeTokens) : held;
  return context >= rules.thresholdTokens;
}

/**
 * What was notified since the rules once this batch is notified too (null: unknown until the workflow publishes
 * again): started while the rules are current, extended while it accounts for every batch before.
 */
export function notifiedAfter(
  rules: QuietRules | null,
  fold: QuietFold | null,
  batch: QuietBatchView,
  standing: RulesStanding,
): NotifiedSince | null {
  if (!rules || batch.seq === null) return null;
  const base: NotifiedSince | null = standing.current
    ? { epoch: rules.epoch, toSeq: batch.seq - 1, prompt: 0, safe: true }
    : sinceFor(rules, standing, batch.seq);
  if (!base) return null;
  return {
    epoch: base.epoch,
    toSeq: batch.seq,
    prompt: Math.max(base.prompt, promptOf(batch)),
    safe: base.safe && !hygieneMayRun(rules, fold, batch, base.prompt),
  };
}

/** The batch's reading (0 without one). */
function promptOf(batch: QuietBatchView): number {
  const prompt = batch.usage?.prompt_tokens;
  return typeof prompt === 'number' && Number.isFinite(prompt) && prompt > 0 ? prompt : 0;
}
