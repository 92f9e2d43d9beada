// The gateway's transcript cache (workers/gateway/transcriptCache.ts): what it keeps within its budget. Whether a
// kept reading is used or read anew is tested on the real services (test/integration/llm/chatTurns.test.ts).
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../../infra/db/messages.js';
import { TranscriptCache, type TranscriptReading } from '../../../workers/gateway/transcriptCache.js';

function reading(tokens: number[]): TranscriptReading {
  const rows = tokens.map(
    (tokenEstimate, position) =>
      ({ id: position + 1, position, tokenEstimate, message: { role: 'user', content: 'x' } }) as StoredMessage,
  );
  return { sessionId: 's', rewrites: 0, rows, tokens: tokens.reduce((sum, n) => sum + n, 0) };
}

describe('the transcript cache', () => {
  it('keeps transcripts within its token budget, the least recently kept going first', () => {
    const cache = new TranscriptCache(100);
    cache.keep('t', 'a', reading([30, 10]));
    cache.keep('t', 'b', reading([40]));
    expect(cache.size).toEqual({ transcripts: 2, tokens: 80 });
    // a again (a turn's new reading replaces its old one), then c: b is the least recently kept and goes.
    cache.keep('t', 'a', reading([30, 10, 5]));
    cache.keep('t', 'c', reading([50]));
    expect(cache.size).toEqual({ transcripts: 2, tokens: 95 });
  });

  it('never keeps a transcript above the budget, nor an empty one, and forgets the older reading', () => {
    const cache = new TranscriptCache(100);
    cache.keep('t', 'a', reading([60]));
    cache.keep('t', 'a', reading([60, 50]));
    expect(cache.size).toEqual({ transcripts: 0, tokens: 0 });
    cache.keep('t', 'b', reading([]));
    expect(cache.size).toEqual({ transcripts: 0, tokens: 0 });
  });
});
