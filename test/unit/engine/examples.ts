// The boundary worked examples of SPEC §8.4 as fixtures.
import { type ChatMessage, messageCost } from '../../../engine/index.js';
import { asst, call, sys, tool, user } from './builders.js';

/** Pads string content with ASCII so that the §3.3 cost is exactly `cost` (when reachable). */
export function withCost(message: ChatMessage, cost: number): ChatMessage {
  const base = messageCost({ ...message, content: '' });
  const pad = Math.max(0, cost - base) * 4;
  const text = typeof message.content === 'string' ? message.content : '';
  return { ...message, content: (text + '.'.repeat(pad)).slice(0, Math.max(text.length, pad)) };
}

/**
 * Example A: protect_first_n 3, protect_last_n 4, tail budget 100, every message costs 30 (row 8 has two calls
 * whose JSON alone exceeds 30 tokens; the walk never reaches it).
 */
export function exampleA(): ChatMessage[] {
  const rows = [
    sys('S'),
    user('u1'),
    asst('a1'),
    user('u2'),
    asst('', [call('c1', 'f')]),
    tool('c1', 'r1'),
    asst('a2'),
    user('u3'),
    asst('', [call('c2', 'f'), call('c3', 'f')]),
    tool('c2', 'r2'),
    tool('c3', 'r3'),
    asst('a3'),
    user('u4'),
    asst('a4'),
  ];
  return rows.map((m) => withCost(m, 30));
}

/** Example B: defaults, budget 10,000; rows 4–33 are 15 tool rounds with 5,000-token results. */
export function exampleB(): ChatMessage[] {
  const rows: ChatMessage[] = [sys('S'), user('u1'), asst('a1'), user('u2')];
  for (let round = 0; round < 15; round++) {
    const id = `call${round}`;
    rows.push(asst(null, [call(id, 'run')]));
    rows.push(tool(id, `${round}:`.padEnd(20_000, String.fromCharCode(97 + round))));
  }
  return rows;
}
