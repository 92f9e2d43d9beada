// What the user is told about a compaction (SPEC §16.5, and the minimum-gain rule of SPEC §19). Pure.
import type { CompactionOutcome } from '../../contracts/compaction.js';
import { NOTICE_ABORT, NOTICE_FALLBACK, NOTICE_NOOP_NO_WINDOW, NOTICE_NOOP_SHORT } from '../../engine/index.js';

/** SPEC §19 minimum-gain rule: the notice of a compaction that was not committed because it saved too little. */
export function noGainNotice(tokensBefore: number, tokensAfter: number): string {
  return (
    `Compaction not committed: the compacted transcript would not have been smaller ` +
    `(${tokensBefore.toLocaleString('en-US')} → ${tokensAfter.toLocaleString('en-US')} estimated tokens). ` +
    'No messages were changed.'
  );
}

/** SPEC §16.5: what the user is told about a compaction (no-op texts, abort, fallback, no gain), or null. */
export function noticeFor(
  outcome: Pick<CompactionOutcome, 'status' | 'noopReason'> & Partial<Pick<CompactionOutcome, 'stats'>>,
): string | null {
  if (outcome.status === 'noop') {
    return outcome.noopReason === 'insufficient_messages' ? NOTICE_NOOP_SHORT : NOTICE_NOOP_NO_WINDOW;
  }
  if (outcome.status === 'aborted') return NOTICE_ABORT;
  if (outcome.status === 'fallback') return NOTICE_FALLBACK;
  if (outcome.status === 'rejected' && outcome.stats) {
    return noGainNotice(outcome.stats.tokensBefore, outcome.stats.tokensAfter);
  }
  return null;
}
