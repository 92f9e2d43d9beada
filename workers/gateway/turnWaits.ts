// How long a chat turn waits for the workflow's next rules before it runs (workers/gateway/chatTurns.ts, issue #11 §2).
import { rulesJudgeTurn } from '../../engine/index.js';
import { standingOf } from '../../infra/db/quietBatches.js';
import type { ConversationRow } from '../../infra/db/schema.js';

/** How long a turn waits for the workflow's next rules when the rules are not current (rulesWait). */
export interface TurnWaits {
  /** What was notified since the rules is not known: else the turn goes to the workflow. Default 250 ms. */
  unknownMs?: number;
  /**
   * The turn could run here unwaited (what was notified since the rules judges it), its batches notified; each
   * notification leaves the next turn's rules stale again, so back-to-back turns would keep notifying, where with
   * current rules they are quiet. Default 100 ms: a slow workflow adds no more to a turn that could have run.
   */
  judgedMs?: number;
}

/** Whether what was notified since the rules judged the turn (rulesWait). */
export type WaitStanding = 'judged' | 'unknown';
/**
 * How long a turn waits for the workflow's next rules (null: not at all). When the rules would let a turn run here
 * but are not current (infra/db/quietBatches.ts), the workflow's next publication is worth a short wait (TurnWaits).
 */
export function rulesWait(
  row: ConversationRow,
  waits: Required<TurnWaits>,
): { ms: number; standing: WaitStanding } | null {
  const rules = row.quiet_rules;
  if (rules?.gatewayTurns !== true) return null;
  const standing = standingOf(row, row.batch_seq + 1);
  if (standing.current) return null;
  const judged = rulesJudgeTurn(rules, standing, row.batch_seq + 1);
  const ms = judged ? waits.judgedMs : waits.unknownMs;
  return ms > 0 ? { ms, standing: judged ? 'judged' : 'unknown' } : null;
}
