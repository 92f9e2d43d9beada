// How long a chat turn waits for the workflow's next rules before it runs (workers/gateway/chatTurns.ts, issue #11 §2).
import type { Kysely } from 'kysely';
import { rulesJudgeTurn } from '../../engine/index.js';
import { getConversation, waitConversation } from '../../infra/db/conversations.js';
import { standingOf } from '../../infra/db/quietBatches.js';
import type { ConversationRow, Database } from '../../infra/db/schema.js';
import { getTenantPolicy } from '../../infra/db/tenants.js';

/** How long a turn waits for the workflow's next rules when the rules are not current (rulesWait). */
export interface TurnWaits {
  /** What was notified since the rules is not known: else the turn goes to the workflow. Default 250 ms. */
  unknownMs?: number;
  /**
   * The turn could run here unwaited (what was notified since the rules judges it), its batches notified; each
   * notification leaves the next turn's rules stale again, so back-to-back turns would keep notifying, where with
   * current rules they are quiet. Default 250 ms, as long as `unknownMs`: a publication takes a notification's
   * signal and a workflow task with its local activity, ~80–100 ms on average on a busy 2-core machine, so a shorter
   * bound gives up on about half of them, and a turn that gives up costs more than it saved — it runs notified, the
   * next turn waits again, and the turn pays the wait and its own notification (`bench:load --chat` phase B p99, one
   * machine, one day: 214 and 233 ms at 100 ms; 178, 181, 187, 192, 204 and 217 ms at 250; at 0 ms turns chained
   * until they fell to the workflow, p99 428 ms).
   */
  judgedMs?: number;
}

/** The waits a gateway uses unless told otherwise (ChatTurns). */
export const DEFAULT_TURN_WAITS: Required<TurnWaits> = { unknownMs: 250, judgedMs: 250 };

/** Whether what was notified since the rules judged the turn (rulesWait). */
export type WaitStanding = 'judged' | 'unknown';

/** A wait for the workflow's next rules (rulesWait). */
export interface RulesWait {
  ms: number;
  standing: WaitStanding;
}

/**
 * How long a turn waits for the workflow's next rules (null: not at all). When the rules would let a turn run here
 * but are not current (infra/db/quietBatches.ts), the workflow's next publication is worth a short wait (TurnWaits).
 */
export function rulesWait(row: ConversationRow, waits: Required<TurnWaits>): RulesWait | null {
  const rules = row.quiet_rules;
  if (rules?.gatewayTurns !== true) return null;
  const standing = standingOf(row, row.batch_seq + 1);
  if (standing.current) return null;
  const judged = rulesJudgeTurn(rules, standing, row.batch_seq + 1);
  const ms = judged ? waits.judgedMs : waits.unknownMs;
  return ms > 0 ? { ms, standing: judged ? 'judged' : 'unknown' } : null;
}

/**
 * Waits, bounded, until the rules are current for the conversation's next batch: published for its latest
 * notification epoch, every batch before decided. Waiting for the applied position alone is not enough: a
 * compaction's settlement, a manual compaction or a model switch voids the rules without a batch. The row is read
 * after 5 ms, then at most every 20 ms (a publication comes within a workflow task: ~40–80 ms on a busy machine).
 *
 * True once it waited, whether or not the rules came in time; false without waiting when nothing will publish: a
 * compression-policy change voids the rules of its tenant's conversations, and the workflow takes the new policy
 * over only when it hears of something (the turn goes to it).
 */
export async function waitRules(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  wait: RulesWait,
): Promise<boolean> {
  const current = (row: ConversationRow) => standingOf(row, row.batch_seq + 1).current;
  const row = await getConversation(db, tenantId, conversationId);
  if (!row || current(row)) return true;
  if (row.applied_seq === row.batch_seq && row.state !== null) {
    const policy = await getTenantPolicy(db, tenantId);
    if (policy && row.state.policyVersion < policy.version) return false;
  }
  await waitConversation(db, tenantId, conversationId, current, {
    timeoutMs: wait.ms,
    intervalMs: 5,
    maxIntervalMs: 20,
    seen: row,
  });
  return true;
}

/**
 * Under the append's lock, the rules are not current for the turn (rulesWait): nothing was stored; the turn waits
 * for them (`wait`), then appends again (workers/gateway/chatTurns.ts).
 */
export class RulesNotCurrentError extends Error {
  constructor(readonly wait: RulesWait) {
    super("the workflow's rules are not current for the turn's append");
    this.name = 'RulesNotCurrentError';
  }
}
