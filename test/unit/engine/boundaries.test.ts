import { describe, expect, it } from 'vitest';
import {
  alignBoundaryBackward,
  alignBoundaryForward,
  anchorToUsers,
  type ChatMessage,
  findBoundaries,
  findHeadEnd,
  findTailCut,
  messageCost,
  SUMMARY_PREFIX,
} from '../../../engine/index.js';
import { asst, call, sys, tool, user } from './builders.js';
import { exampleA, exampleB } from './examples.js';

const filler = (n: number): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => (i % 2 ? asst(`a${i}`) : user(`u${i}`)));

describe('alignment helpers (§8.3.3)', () => {
  const list: ChatMessage[] = [
    ...filler(9),
    tool('x', 'orphan'),
    asst(null, [call('c1'), call('c2')]),
    tool('c1', 'r1'),
    tool('c2', 'r2'),
    user('u13'),
  ];
  it('spec examples: backward(12) = backward(13) = 10', () => {
    expect(list[10]?.tool_calls?.length).toBe(2);
    expect(alignBoundaryBackward(list, 12)).toBe(10);
    expect(alignBoundaryBackward(list, 13)).toBe(10);
  });
  it('unchanged after a user message or an assistant without calls; 0 and n are returned as is', () => {
    expect(alignBoundaryBackward(list, 14)).toBe(14);
    expect(alignBoundaryBackward(list, 8)).toBe(8);
    expect(alignBoundaryBackward(list, 0)).toBe(0);
  });
  it('is not idempotent: applied to 10 it moves past the preceding tool row only to a calling assistant', () => {
    const l2 = [user('u'), asst(null, [call('z')]), tool('z', 'r'), asst(null, [call('c1')]), tool('c1', 'r')];
    expect(alignBoundaryBackward(l2, 5)).toBe(5);
    expect(alignBoundaryBackward(l2, 4)).toBe(3);
    expect(alignBoundaryBackward(l2, 3)).toBe(1);
  });
  it('forward skips tool rows', () => {
    expect(alignBoundaryForward(list, 11)).toBe(13);
    expect(alignBoundaryForward(list, 9)).toBe(10);
    expect(alignBoundaryForward(list, 3)).toBe(3);
  });
  it('clamps the index to [0, n]', () => {
    expect(alignBoundaryForward(list, -5)).toBe(0);
    expect(alignBoundaryForward(list, 99)).toBe(list.length);
    expect(alignBoundaryBackward(list, 99)).toBe(list.length);
    expect(alignBoundaryBackward(list, -1)).toBe(0);
    expect(alignBoundaryBackward([], 3)).toBe(0);
  });
});

describe('head (§8.3.1)', () => {
  it('protect_first_n counts the system message and extends over tool rows', () => {
    const list = [sys(), user('u'), asst(null, [call('c')]), tool('c', 'r'), user('v')];
    expect(findHeadEnd(list, 3)).toBe(4);
    expect(findHeadEnd(list, 2)).toBe(2);
  });
  it('the system prompt is never summarised, even with protect_first_n 0', () => {
    expect(findHeadEnd([sys(), user('u')], 0)).toBe(1);
    expect(findHeadEnd([user('u'), asst('a')], 0)).toBe(0);
    expect(findHeadEnd([user('u')], 5)).toBe(1);
  });
});

describe('tail walk (§8.3.2)', () => {
  it('everything fits → tail is exactly protect_last_n', () => {
    const list = [sys(), ...filler(20)];
    expect(findTailCut(list, 1, 4, 1_000_000)).toBe(17);
  });
  it('the budget can only make the tail longer than protect_last_n', () => {
    const list = [sys(), ...filler(20)];
    const cost = messageCost(list[20] as ChatMessage);
    expect(findTailCut(list, 1, 4, cost * 8)).toBe(list.length - 8);
    expect(findTailCut(list, 1, 4, 1)).toBe(list.length - 4);
  });
});

describe('worked examples (§8.4)', () => {
  it('Example A: headEnd 3, cut 8, no re-insert', () => {
    const list = exampleA();
    expect(list.slice(9).map(messageCost)).toEqual([30, 30, 30, 30, 30]);
    const limits = { protectFirstN: 3, protectLastN: 4, minTailUserMessages: 1, tailTokenBudget: 100 };
    expect(findHeadEnd(list, 3)).toBe(3);
    expect(findTailCut(list, 3, 4, 100)).toBe(8);
    expect(findBoundaries(list, limits)).toEqual({ headEnd: 3, cut: 8, reinsertIndex: null, noop: false });
  });
  it('Example B: oversized turn → cut 12 = budgetCut, re-insert u2 (row 3)', () => {
    const list = exampleB();
    expect(list).toHaveLength(34);
    expect(findTailCut(list, 3, 20, 10_000)).toBe(12);
    const limits = { protectFirstN: 3, protectLastN: 20, minTailUserMessages: 1, tailTokenBudget: 10_000 };
    expect(findBoundaries(list, limits)).toEqual({ headEnd: 3, cut: 12, reinsertIndex: 3, noop: false });
  });
});

describe('user anchors (§8.3.4) and the oversized-turn rule (§8.3.5)', () => {
  // 0 S, 1 u, 2 a, then alternating; budgetCut given explicitly.
  const list = [sys(), user('u1'), asst('a1'), ...filler(30)];
  it('latest real user before the budget cut pulls the cut back to it', () => {
    // filler users sit at the odd absolute indexes 3..31
    expect(anchorToUsers(list, 3, 32, 1, null)).toEqual({ cut: 31, reinsertIndex: null });
  });
  it('a user at or after the budget cut keeps the budget cut', () => {
    expect(anchorToUsers(list, 3, 20, 1, null)).toEqual({ cut: 20, reinsertIndex: null });
  });
  it('min_tail_user_messages k keeps the k newest real users in the tail', () => {
    expect(anchorToUsers(list, 3, 33, 3, null)).toEqual({ cut: 27, reinsertIndex: null });
  });
  it('k is relaxed when the k-th newest would empty the window; latest still kept', () => {
    const short = [sys(), user('u1'), asst('a1'), user('u2'), asst('a2'), user('u3'), asst('a3')];
    // k = 5 → oldest available (3) → anchor 3 ≤ headEnd 3 → relax to latest (5)
    expect(anchorToUsers(short, 3, 7, 5, null)).toEqual({ cut: 5, reinsertIndex: null });
  });
  it('summary and synthetic rows are not anchors; merged summaries with own text are', () => {
    const body = 'B';
    const rows = [
      sys(),
      user('u1'),
      asst('a1'),
      user('real'),
      asst('x'),
      user(`${SUMMARY_PREFIX}\n${body}`),
      asst('y'),
    ];
    expect(anchorToUsers(rows, 3, 7, 1, body)).toEqual({ cut: 7, reinsertIndex: 3 });
    const merged = [...rows.slice(0, 5), user(`${SUMMARY_PREFIX}\n${body}\n\nmine`), asst('y')];
    expect(anchorToUsers(merged, 3, 7, 1, body)).toEqual({ cut: 5, reinsertIndex: null });
  });
  it('oversized turn: latest user at headEnd → budget cut with re-insert', () => {
    const rows = [sys(), user('u1'), asst('a1'), user('u2'), asst('a2'), asst('a3'), asst('a4')];
    expect(anchorToUsers(rows, 3, 5, 1, null)).toEqual({ cut: 5, reinsertIndex: 3 });
  });
  it('no real user after the head → budget cut unchanged', () => {
    const rows = [sys(), user('u1'), asst('a1'), asst('a2'), asst('a3')];
    expect(anchorToUsers(rows, 3, 4, 1, null)).toEqual({ cut: 4, reinsertIndex: null });
  });
});

describe('findBoundaries no-op reasons (§8.1 S1, §8.3.6)', () => {
  const limits = { protectFirstN: 3, protectLastN: 20, minTailUserMessages: 1, tailTokenBudget: 10_000 };
  it('n ≤ first + last + 1 → insufficient_messages (needs 25 with defaults)', () => {
    expect(findBoundaries([sys(), ...filler(23)], limits).noop).toBe('insufficient_messages');
    expect(findBoundaries([sys(), ...filler(24)], limits).noop).toBe(false);
  });
  it('an empty window → no_compressible_window', () => {
    // Everything after the head is one tool group → alignment pulls the cut into the head.
    const rows: ChatMessage[] = [
      sys(),
      user('u'),
      asst(
        null,
        Array.from({ length: 30 }, (_, i) => call(`c${i}`)),
      ),
    ];
    for (let i = 0; i < 30; i++) rows.push(tool(`c${i}`, 'r'));
    expect(findBoundaries(rows, { ...limits, protectFirstN: 2 }).noop).toBe('no_compressible_window');
  });
});
