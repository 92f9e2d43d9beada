// The pieces of a relayed turn's text (infra/db/turnText.ts): put back in order whatever order they arrive in, a
// later attempt starts the text over (said once, and only after text was given), an earlier attempt's late piece is
// dropped; every turn id gets a channel name PostgreSQL keeps whole.
import { describe, expect, it } from 'vitest';
import { orderedPieces, TurnTextListener, turnTextChannel } from '../../../infra/db/turnText.js';

function heard() {
  const out: string[] = [];
  const listener = orderedPieces({ text: (text) => out.push(text), restart: () => out.push('<restart>') });
  return { out, listener };
}

describe('orderedPieces', () => {
  it('gives the pieces of an attempt in sequence order, holding early ones back', () => {
    const { out, listener } = heard();
    listener({ attempt: 1, seq: 1, text: 'B' });
    expect(out).toEqual([]);
    listener({ attempt: 1, seq: 0, text: 'A' });
    listener({ attempt: 1, seq: 3, text: 'D' });
    listener({ attempt: 1, seq: 2, text: 'C' });
    expect(out.join('')).toBe('ABCD');
  });

  it('a later attempt restarts once; an earlier attempt’s late piece is dropped', () => {
    const { out, listener } = heard();
    listener({ attempt: 1, seq: 0, text: 'broken' });
    listener({ attempt: 2, seq: 1, text: ' again' });
    listener({ attempt: 1, seq: 1, text: ' late' });
    listener({ attempt: 2, seq: 0, text: 'answered' });
    expect(out).toEqual(['broken', '<restart>', 'answered', ' again']);
    // An attempt that gave nothing before the next one needs no restart.
    const quiet = heard();
    quiet.listener({ attempt: 2, seq: 0, text: 'first words' });
    expect(quiet.out).toEqual(['first words']);
  });
});

describe('turnTextChannel', () => {
  it('is a lower-case identifier of at most 63 bytes, one per turn', () => {
    const long = `${'conversation-'.repeat(12)}:turn`;
    const channel = turnTextChannel(long);
    expect(channel).toMatch(/^[a-z_][a-z0-9_]{0,62}$/);
    expect(turnTextChannel(long)).toBe(channel);
    expect(turnTextChannel(`${long}2`)).not.toBe(channel);
  });
});

describe('TurnTextListener', () => {
  it('a subscription that could not LISTEN leaves nothing behind: the next one for the turn tries again', async () => {
    const listener = new TurnTextListener('postgres://dctx@127.0.0.1:1/unreachable');
    await expect(listener.subscribe('conv:turn', () => undefined)).rejects.toThrow();
    await expect(listener.subscribe('conv:turn', () => undefined)).rejects.toThrow();
    await listener.close();
  });
});
