import { describe, expect, it } from 'vitest';
import { ORPHAN_CALL_STUB, sanitizeToolPairs, unpairedToolIds } from '../../../engine/index.js';
import { asst, call, expectSameObjects, sys, tool, user } from './builders.js';

const stub = (id: string) => ({ role: 'tool', tool_call_id: id, content: ORPHAN_CALL_STUB });

describe('sanitizeToolPairs (§8.7)', () => {
  it('removes tool rows without a matching call (and without an id)', () => {
    const noId = { role: 'tool' as const, content: 'x' };
    const list = [sys(), user('u'), tool('ghost', 'r'), noId, asst('a')];
    expect(sanitizeToolPairs(list)).toEqual([sys(), user('u'), asst('a')]);
  });

  it('stubs missing results right after the assistant, in call order, before existing results', () => {
    const a = asst(null, [call('c1'), call('c2'), call('c3')]);
    const list = [user('u'), a, tool('c2', 'r2'), user('next')];
    expect(sanitizeToolPairs(list)).toEqual([user('u'), a, stub('c1'), stub('c3'), tool('c2', 'r2'), user('next')]);
  });

  it('the last message is exempt: its calls may be in flight', () => {
    const a = asst(null, [call('c1')]);
    const list = [user('u'), a];
    expect(sanitizeToolPairs(list)).toEqual(list);
  });

  it('a removed orphan result at the end makes the calling assistant last (exempt)', () => {
    const a = asst(null, [call('c1')]);
    expect(sanitizeToolPairs([user('u'), a, tool('zz', 'orphan')])).toEqual([user('u'), a]);
  });

  it('membership is by id across the whole list', () => {
    const a = asst(null, [call('c1')]);
    const list = [user('u'), a, user('interleaved'), tool('c1', 'late')];
    expect(sanitizeToolPairs(list)).toEqual(list);
  });

  it('a clean list comes back deep-equal, with the same objects, as a new array', () => {
    const list = [sys(), user('u'), asst(null, [call('c1')]), tool('c1', 'r'), asst('done')];
    const before = structuredClone(list);
    const out = sanitizeToolPairs(list);
    expect(out).not.toBe(list);
    expect(out).toEqual(before);
    expectSameObjects(out, list);
  });

  it('does not mutate the input when repairing', () => {
    const list = [user('u'), asst(null, [call('c1')]), tool('nope', 'r'), user('v')];
    const before = structuredClone(list);
    sanitizeToolPairs(list);
    expect(list).toEqual(before);
  });
});

describe('unpairedToolIds (adjacent call/result pairs)', () => {
  const ids = (...messages: Parameters<typeof unpairedToolIds>[0]) => [...unpairedToolIds(messages)].sort();

  it('is empty for calls followed directly by all their results, in any order', () => {
    expect(ids(user('q'), asst(null, [call('a'), call('b')]), tool('b', 'B'), tool('a', 'A'), asst('done'))).toEqual(
      [],
    );
  });

  it('names a result that does not follow its call, a call without its results, and a result of no call', () => {
    expect(ids(user('q'), asst(null, [call('a')]), user('between'), tool('a', 'A'))).toEqual(['a']);
    expect(ids(user('q'), tool('a', 'A'), asst(null, [call('a')]), user('x'))).toEqual(['a']);
    expect(ids(user('q'), asst(null, [call('a'), call('b')]), tool('a', 'A'), user('x'))).toEqual(['b']);
    expect(ids(user('q'), tool('zz', 'Z'))).toEqual(['zz']);
  });

  it('a repeated call id or a second result for one call is unpaired', () => {
    expect(ids(asst(null, [call('a')]), tool('a', 'A'), asst(null, [call('a')]), tool('a', 'A'))).toEqual(['a']);
    expect(ids(asst(null, [call('a')]), tool('a', 'A'), tool('a', 'A again'), user('x'))).toEqual(['a']);
  });

  it('the last assistant message’s calls may still wait for their results (in flight)', () => {
    expect(ids(user('q'), asst(null, [call('a'), call('b')]))).toEqual([]);
    expect(ids(user('q'), asst(null, [call('a'), call('b')]), tool('a', 'A'))).toEqual([]);
  });
});
