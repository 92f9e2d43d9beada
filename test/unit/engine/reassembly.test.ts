import { describe, expect, it } from 'vitest';
import {
  type ChatMessage,
  chooseSummaryPlacement,
  mergeSummaryInto,
  ORPHAN_CALL_STUB,
  type Role,
  reassemble,
  reinsertedUserCopy,
  SUMMARY_PREFIX,
  SYSTEM_NOTE,
  summaryText,
  withSystemNote,
} from '../../../engine/index.js';
import { asst, call, sys, tool, user } from './builders.js';

describe('system note (§8.6.1)', () => {
  it('string, empty, null and array content', () => {
    expect(withSystemNote(sys('Be brief.')).content).toBe(`Be brief.\n\n${SYSTEM_NOTE}`);
    expect(withSystemNote(sys('')).content).toBe(SYSTEM_NOTE);
    expect(withSystemNote(sys(null)).content).toBe(SYSTEM_NOTE);
    const parts = [{ type: 'text' as const, text: 'Be brief.' }];
    expect(withSystemNote(sys(parts)).content).toEqual([...parts, { type: 'text', text: SYSTEM_NOTE }]);
  });
  it('idempotent: a prompt that already contains the note is returned as is', () => {
    const once = withSystemNote({ ...sys('P'), extra: 1 } as ChatMessage);
    expect(once).toMatchObject({ extra: 1 });
    expect(withSystemNote(once)).toBe(once);
    const arr = withSystemNote(sys([{ type: 'text', text: 'P' }]));
    expect(withSystemNote(arr)).toBe(arr);
  });
});

describe('summary role table (§8.6.2), every cell', () => {
  const cases: [Role | null, Role, 'merge' | 'user' | 'assistant'][] = [
    ['assistant', 'user', 'merge'],
    ['assistant', 'assistant', 'user'],
    ['assistant', 'tool', 'user'],
    ['tool', 'user', 'assistant'],
    ['tool', 'assistant', 'user'],
    ['tool', 'tool', 'user'],
    ['user', 'user', 'assistant'],
    ['user', 'assistant', 'merge'],
    ['user', 'tool', 'assistant'],
    [null, 'user', 'assistant'],
    [null, 'assistant', 'merge'],
    [null, 'tool', 'assistant'],
    ['system', 'user', 'assistant'],
    ['system', 'assistant', 'user'],
    ['system', 'tool', 'assistant'],
  ];
  it.each(cases)('last head %s, first tail %s → %s', (head, tail, expected) => {
    const placement = chooseSummaryPlacement(head, tail);
    expect(placement).toEqual(expected === 'merge' ? { kind: 'merge' } : { kind: 'standalone', role: expected });
  });
  it.each([
    ['assistant', 'user'],
    ['tool', 'user'],
    ['user', 'assistant'],
    ['system', 'assistant'],
    [null, 'assistant'],
  ] as const)('§18.1 empty sanitised tail after %s → standalone %s', (head, role) => {
    expect(chooseSummaryPlacement(head, null)).toEqual({ kind: 'standalone', role });
  });
});

describe('merge (§8.6.2)', () => {
  const text = summaryText('B');
  it('string, empty, null and array content; other properties kept', () => {
    expect(mergeSummaryInto({ ...user('hi'), name: 'n' }, text)).toEqual({
      role: 'user',
      name: 'n',
      content: `${text}\n\nhi`,
    });
    expect(mergeSummaryInto(user(''), text).content).toBe(text);
    expect(mergeSummaryInto(asst(null, [call('c')]), text)).toEqual(asst(text, [call('c')]));
    const parts = [{ type: 'image_url' as const, image_url: { url: 'u' } }];
    expect(mergeSummaryInto(user(parts), text).content).toEqual([{ type: 'text', text }, ...parts]);
  });
});

describe('re-inserted user copy (§8.6.3, §18.3)', () => {
  it('a deep copy of the content plus name, nothing else', () => {
    const parts = [{ type: 'text' as const, text: 'hi', cache_control: { type: 'ephemeral' as const } }];
    const source = { role: 'user' as const, content: parts, name: 'alice', extra: true } as ChatMessage;
    const copy = reinsertedUserCopy(source, null);
    expect(copy).toEqual({ role: 'user', content: parts, name: 'alice' });
    expect(copy.content).not.toBe(parts);
    expect((copy.content as typeof parts)[0]?.cache_control).not.toBe(parts[0]?.cache_control);
  });
  it('only the own text of a merged summary', () => {
    const source = user(`${summaryText('B')}\n\nthe request`);
    expect(reinsertedUserCopy(source, 'B')).toEqual(user('the request'));
  });
});

const base = { summaryBody: 'B', previousSummary: null };
const text = `${SUMMARY_PREFIX}\nB`;

describe('reassemble (§8.6.4, §18.1)', () => {
  it('head + standalone summary + tail, system note once', () => {
    const list = [sys('S'), user('u1'), asst('a1'), user('old'), asst('old'), asst('a2'), user('u3')];
    const out = reassemble({ ...base, working: list, input: list, headEnd: 3, cut: 5, reinsertIndex: null });
    expect(out).toEqual([
      sys(`S\n\n${SYSTEM_NOTE}`),
      user('u1'),
      asst('a1'),
      { role: 'user', content: text },
      asst('a2'),
      user('u3'),
    ]);
    const again = reassemble({ ...base, working: out, input: out, headEnd: 3, cut: 4, reinsertIndex: null });
    expect(again[0]).toBe(out[0]);
  });
  it('merges into the first tail row when both flips collide', () => {
    const list = [sys('S'), user('u1'), asst('a1'), user('old'), asst('old'), user('u2'), asst('a2')];
    const out = reassemble({ ...base, working: list, input: list, headEnd: 3, cut: 5, reinsertIndex: null });
    expect(out[3]).toEqual(user(`${text}\n\nu2`));
    expect(out).toHaveLength(5);
  });
  it('re-insert: the copy heads the tail and receives the merge', () => {
    const list = [sys('S'), user('u1'), asst('a1'), user('u2'), asst(null, [call('c1')]), tool('c1', 'r'), asst('x')];
    const out = reassemble({ ...base, working: list, input: list, headEnd: 3, cut: 4, reinsertIndex: 3 });
    expect(out.slice(3)).toEqual([user(`${text}\n\nu2`), ...list.slice(4)]);
  });
  it('role is chosen on sanitised neighbours: orphan tail tool rows are dropped first', () => {
    const list = [sys('S'), user('u1'), asst('a1'), asst(null, [call('c1')]), tool('c1', 'r'), user('u2'), asst('z')];
    // cut at the tool row: its call is in the window → removed; first sanitised tail row is u2 → merge
    const out = reassemble({ ...base, working: list, input: list, headEnd: 3, cut: 4, reinsertIndex: null });
    expect(out.slice(3)).toEqual([user(`${text}\n\nu2`), asst('z')]);
  });
  it('head calls without results get stubs after the head row, never after the summary', () => {
    const list = [user('u1'), asst(null, [call('h1')]), user('w'), asst('w'), asst('t')];
    const out = reassemble({ ...base, working: list, input: list, headEnd: 2, cut: 4, reinsertIndex: null });
    expect(out).toEqual([
      user('u1'),
      asst(null, [call('h1')]),
      { role: 'tool', tool_call_id: 'h1', content: ORPHAN_CALL_STUB },
      { role: 'user', content: text },
      asst('t'),
    ]);
  });
  it('§18.1: an empty sanitised tail → standalone summary by the last head role', () => {
    const list = [user('u1'), asst('a1'), user('w'), tool('zz', 'orphan')];
    const out = reassemble({ ...base, working: list, input: list, headEnd: 2, cut: 3, reinsertIndex: null });
    expect(out).toEqual([user('u1'), asst('a1'), { role: 'user', content: text }]);
  });
});
