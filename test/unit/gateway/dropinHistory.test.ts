// The drop-in history keys (workers/gateway/dropin/history.ts, issue #12): what makes two messages the same across
// a stateless client's requests, and how a history stands against what a conversation stores.
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../engine/types.js';
import { digest, wireOf } from '../../../infra/db/historyKeys.js';
import {
  branchConversationId,
  derivedConversationIds,
  historyKey,
  historyKeys,
  matchHistory,
  withTodaysSystem,
} from '../../../workers/gateway/dropin/history.js';

const user = (content: ChatMessage['content']): ChatMessage => ({ role: 'user', content });

describe('history keys', () => {
  it('ignore what a client adds for itself; text as blocks is the same text as a string', () => {
    const stored: ChatMessage = { role: 'assistant', content: 'Paris.' };
    const echoed = { ...stored, refusal: null, annotations: [] } as unknown as ChatMessage;
    expect(historyKey('oa', 2, echoed)).toBe(historyKey('oa', 2, stored));
    const blocks: ChatMessage = {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Par', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'is.' },
      ],
    };
    expect(historyKey('oa', 2, blocks)).toBe(historyKey('oa', 2, stored));
    expect(historyKey('oa', 2, { role: 'assistant', content: null })).toBe(
      historyKey('oa', 2, { role: 'assistant', content: '' }),
    );
  });

  it('of a system message set its calendar dates aside; of any other message they do not', () => {
    const system = (date: string): ChatMessage => ({ role: 'system', content: `Be brief.\nCurrent date: ${date}` });
    expect(historyKey('an', 0, system('2026-12-07'))).toBe(historyKey('an', 0, system('2026-12-06')));
    expect(historyKey('an', 0, system('2026-12-07'))).not.toBe(historyKey('an', 0, system('2026-12-07!')));
    // A system message without a date keeps the key it had.
    const plain: ChatMessage = { role: 'system', content: 'Be brief.' };
    expect(historyKey('an', 0, plain)).toBe(`an:0:${digest(wireOf(plain)).slice(0, 32)}`);
    // A user who edits the date in their question asks another question.
    expect(historyKey('an', 1, user('What happened on 2026-12-01?'))).not.toBe(
      historyKey('an', 1, user('What happened on 2026-12-02?')),
    );
  });

  it('differ by position, role, content, tool calls and dialect', () => {
    const base = historyKey('oa', 1, user('hi'));
    expect(historyKey('oa', 2, user('hi'))).not.toBe(base);
    expect(historyKey('oa', 1, { role: 'system', content: 'hi' })).not.toBe(base);
    expect(historyKey('oa', 1, user('hi!'))).not.toBe(base);
    expect(historyKey('an', 1, user('hi'))).not.toBe(base);
    const call = (args: string): ChatMessage => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }],
    });
    expect(historyKey('oa', 1, call('{"a":1}'))).not.toBe(historyKey('oa', 1, call('{"a":2}')));
    expect(base).toMatch(/^oa:1:[0-9a-f]{32}$/);
  });
});

describe('conversation ids', () => {
  it('derived from the tenant and the opening (to the first user message), not from what follows', () => {
    const opening = [{ role: 'system', content: 'terse' } as ChatMessage, user('hello')];
    const later = [...opening, { role: 'assistant', content: 'hi' } as ChatMessage, user('more')];
    expect(derivedConversationIds('oa', 't1', later).id).toBe(derivedConversationIds('oa', 't1', opening).id);
    expect(derivedConversationIds('oa', 't2', opening).id).not.toBe(derivedConversationIds('oa', 't1', opening).id);
    expect(derivedConversationIds('oa', 't1', [opening[0] as ChatMessage, user('other')]).id).not.toBe(
      derivedConversationIds('oa', 't1', opening).id,
    );
  });

  it('set calendar dates in the opening aside (an agent started on another day), keeping the id given before', () => {
    const opening = (date: string): ChatMessage[] => [
      { role: 'system', content: 'You are a coding agent.' },
      user(`<environment_context>\n  <current_date>${date}</current_date>\n</environment_context>`),
    ];
    const today = derivedConversationIds('or', 't1', opening('2026-12-06')).id;
    expect(derivedConversationIds('or', 't1', opening('2026-12-07')).id).toBe(today);
    expect(derivedConversationIds('or', 't1', opening('2026-12-07T00:03:48.5Z')).id).toBe(today);
    // Only dates: another directory, or a number that is not a date, is another opening.
    expect(derivedConversationIds('or', 't1', opening('20261207')).id).not.toBe(today);
    const moved = opening('2026-12-06').map((m) => (m.role === 'user' ? user(`${m.content}<cwd>/b</cwd>`) : m));
    expect(derivedConversationIds('or', 't1', moved).id).not.toBe(today);
    // The id a conversation got before dates were set aside: the opening's digest as it came.
    const before = `or-${digest(['t1', opening('2026-12-06').map(wireOf)]).slice(0, 40)}`;
    expect(derivedConversationIds('or', 't1', opening('2026-12-06')).dated).toBe(before);
    expect(before).not.toBe(today);
    // An opening without a date had the same id then.
    const plain = [user('hello')];
    expect(derivedConversationIds('or', 't1', plain).dated).toBeNull();
    expect(derivedConversationIds('or', 't1', plain).id).toBe(`or-${digest(['t1', plain.map(wireOf)]).slice(0, 40)}`);
  });

  it('a branch id depends on the history up to the differing message and fits the id pattern', () => {
    const long = `c${'x'.repeat(127)}`;
    const a = [user('one'), user('two')];
    const b = [user('one'), user('deux')];
    expect(branchConversationId(long, a, 2)).not.toBe(branchConversationId(long, b, 2));
    expect(branchConversationId(long, a, 1)).toBe(branchConversationId(long, b, 1));
    expect(branchConversationId(long, a, 2)).toMatch(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/);
  });
});

describe('withTodaysSystem', () => {
  const note = '\n\n[Note: compacted]';
  const summary: ChatMessage = { role: 'user', content: 'SUMMARY' };
  it('gives the compacted transcript the client’s system text of today, what a compaction added kept', () => {
    const stored: ChatMessage = { role: 'system', content: `Be brief.\nCurrent date: 2026-12-06${note}` };
    const today: ChatMessage = { role: 'system', content: 'Be brief.\nCurrent date: 2026-12-07' };
    expect(withTodaysSystem([stored, summary], [today, user('q')])).toEqual([
      { role: 'system', content: `Be brief.\nCurrent date: 2026-12-07${note}` },
      summary,
    ]);
    // As text parts (Anthropic system blocks): the client's parts, then the stored ones after them.
    const parts = (date: string): ChatMessage => ({
      role: 'system',
      content: [{ type: 'text', text: `Be brief. Current date: ${date}`, cache_control: { type: 'ephemeral' } }],
    });
    const storedParts: ChatMessage = {
      role: 'system',
      content: [...(parts('2026-12-06').content as []), { type: 'text', text: note }],
    };
    expect(withTodaysSystem([storedParts], [parts('2026-12-07')])).toEqual([
      { role: 'system', content: [...(parts('2026-12-07').content as []), { type: 'text', text: note }] },
    ]);
  });

  it('leaves a system message that differs in more than dates, and anything after the leading ones', () => {
    const stored: ChatMessage = { role: 'system', content: 'Be brief. 2026-12-06' };
    expect(withTodaysSystem([stored], [{ role: 'system', content: 'Be long. 2026-12-07' }])).toEqual([stored]);
    const later: ChatMessage = { role: 'system', content: 'Later 2026-12-06' };
    const transcript = [summary, later];
    expect(withTodaysSystem(transcript, [user('q'), { role: 'system', content: 'Later 2026-12-07' }])).toEqual(
      transcript,
    );
  });
});

describe('matchHistory', () => {
  const keys = historyKeys('oa', [user('a'), user('b'), user('c')]);
  it('extends: every stored message is the history’s; the rest is new', () => {
    expect(matchHistory(keys, new Set(), 0)).toEqual({ kind: 'extends', from: 0 });
    expect(matchHistory(keys, new Set(keys.slice(0, 2)), 2)).toEqual({ kind: 'extends', from: 2 });
    expect(matchHistory(keys, new Set(keys), 3)).toEqual({ kind: 'extends', from: 3 });
  });
  it('prefix: the history is shorter than what is stored, all of it matching', () => {
    expect(matchHistory(keys, new Set(keys), 4)).toEqual({ kind: 'prefix' });
  });
  it('diverges: the first message that differs from the stored one', () => {
    expect(matchHistory(keys, new Set([keys[0] as string]), 3)).toEqual({ kind: 'diverges', at: 1 });
    expect(matchHistory(keys, new Set([keys[0] as string, keys[2] as string]), 3)).toEqual({
      kind: 'diverges',
      at: 1,
    });
  });
});
