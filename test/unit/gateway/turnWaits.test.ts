// How long a chat turn waits for the workflow's next rules (workers/gateway/turnWaits.ts): none while they are
// current, the short wait while what was notified since them judges the turn, the long one while they are void, and
// which move under the append's lock calls for waiting again. The waits themselves run on the real services
// (test/integration/llm/turnWaits.test.ts).
import { describe, expect, it } from 'vitest';
import type { QuietRules } from '../../../engine/quietBatches.js';
import type { ConversationRow } from '../../../infra/db/schema.js';
import { rulesWait } from '../../../workers/gateway/turnWaits.js';

const WAITS = { judgedMs: 100, unknownMs: 250 };

const rules = { epoch: 3, gatewayTurns: true } as QuietRules;

function row(fields: Partial<ConversationRow>): ConversationRow {
  return {
    quiet_rules: rules,
    notify_epoch: 3,
    applied_seq: 10,
    batch_seq: 10,
    notified_since: null,
    ...fields,
  } as ConversationRow;
}

describe('the wait for the rules', () => {
  it('is none while the rules are current, or when they never let a turn run in the gateway', () => {
    expect(rulesWait(row({}), WAITS)).toBeNull();
    expect(rulesWait(row({ quiet_rules: null, notify_epoch: 4 }), WAITS)).toBeNull();
    expect(rulesWait(row({ quiet_rules: { ...rules, gatewayTurns: false }, notify_epoch: 4 }), WAITS)).toBeNull();
  });

  it('is the long one while the rules are void: a settlement with every batch applied, or a batch not judged', () => {
    expect(rulesWait(row({ notify_epoch: 4 }), WAITS)).toEqual({ ms: 250, standing: 'unknown' });
    expect(rulesWait(row({ notify_epoch: 4, batch_seq: 11 }), WAITS)).toEqual({ ms: 250, standing: 'unknown' });
  });

  it('is the short one while what was notified since the rules accounts for every batch and judges the turn', () => {
    const since = { epoch: 3, toSeq: 11, prompt: 1_000, safe: true };
    const judged = row({ notify_epoch: 4, batch_seq: 11, notified_since: since });
    expect(rulesWait(judged, WAITS)).toEqual({ ms: 100, standing: 'judged' });
    // What was notified since could start a hygiene compaction: not judged, the long wait.
    expect(rulesWait({ ...judged, notified_since: { ...since, safe: false } }, WAITS)).toEqual({
      ms: 250,
      standing: 'unknown',
    });
    // A wait of 0 ms is none.
    expect(rulesWait(judged, { ...WAITS, judgedMs: 0 })).toBeNull();
  });
});
