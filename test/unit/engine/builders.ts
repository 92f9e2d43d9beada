// Message builders shared by the engine unit tests.
import { expect } from 'vitest';
import type { ChatMessage, ToolCall } from '../../../engine/index.js';

export const sys = (content: ChatMessage['content'] = 'You are helpful.'): ChatMessage => ({ role: 'system', content });
export const user = (content: ChatMessage['content']): ChatMessage => ({ role: 'user', content });
export const asst = (content: ChatMessage['content'], calls?: ToolCall[]): ChatMessage =>
  calls === undefined ? { role: 'assistant', content } : { role: 'assistant', content, tool_calls: calls };
export const tool = (id: string, content: ChatMessage['content'], name?: string): ChatMessage =>
  name === undefined ? { role: 'tool', tool_call_id: id, content } : { role: 'tool', tool_call_id: id, content, name };
export const call = (id: string, name = 'read_file', args = '{}'): ToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

/** An ASCII string of exactly `n` characters. */
export const chars = (n: number, fill = 'x'): string => fill.repeat(n).slice(0, n);

/** A summarizer that answers every request with `body` and records the requests. */
export function recordingSummarizer(body = '## Goal\nsummary body') {
  const requests: import('../../../engine/index.js').SummaryRequest[] = [];
  const summarize = async (request: (typeof requests)[number]) => {
    requests.push(request);
    return body;
  };
  return { summarize, requests };
}

/** A controllable clock in ms. */
export function fakeClock(start = 1_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (seconds: number) => {
      t += seconds * 1000;
    },
    set: (ms: number) => {
      t = ms;
    },
  };
}

/** Same message objects, in order (unchanged rows MAY be the input's objects, §8.1). */
export function expectSameObjects(actual: readonly unknown[], expected: readonly unknown[]): void {
  expect(actual).toHaveLength(expected.length);
  for (let i = 0; i < expected.length; i++) expect(actual[i]).toBe(expected[i]);
}
