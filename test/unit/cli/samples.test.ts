// The shipped sample transcripts (samples/*.jsonl, data: their generator is tools/sample-generator, outside the
// product build): importable by `dctx import`, of the promised size and shape.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseTranscript, planBatches, transcriptHash } from '../../../clients/transcript.js';
import { estimateMessagesTokensRough } from '../../../engine/index.js';

const read = (file: string) => readFileSync(new URL(`../../../samples/${file}`, import.meta.url), 'utf8');

describe('samples', () => {
  it('the coding-agent session is long, tool-heavy and well-formed', () => {
    const entries = parseTranscript(read('coding-agent.en.jsonl'));
    const messages = entries.map((e) => e.message);
    expect(messages.length).toBeGreaterThanOrEqual(600);
    const tokens = estimateMessagesTokensRough(messages);
    expect(tokens).toBeGreaterThanOrEqual(250_000);
    expect(tokens).toBeLessThanOrEqual(400_000);
    // every tool call is answered, in order, by a tool row with its id and name
    for (let i = 0; i < messages.length; i++) {
      const calls = messages[i]?.tool_calls ?? [];
      calls.forEach((call, k) => {
        const answer = messages[i + 1 + k];
        expect(answer).toMatchObject({ role: 'tool', tool_call_id: call.id, name: call.function.name });
        expect(() => JSON.parse(call.function.arguments)).not.toThrow();
      });
    }
    const text = messages
      .map(
        (m) =>
          `${typeof m.content === 'string' ? m.content : ''}${(m.tool_calls ?? []).map((c) => c.function.arguments).join('')}`,
      )
      .join('\n');
    const missing = [
      'npm test',
      'git diff',
      'grep -rn',
      'AssertionError',
      'TaxCalculator.rateOf src/tax/calculator.ts:',
    ].filter((n) => !text.includes(n));
    expect(missing).toEqual([]);
    expect(messages.filter((m) => m.role === 'user').length).toBeGreaterThanOrEqual(10);
  });

  it('the Japanese conversation is long and uses two-character words', () => {
    const messages = parseTranscript(read('long-conversation.ja.jsonl')).map((e) => e.message);
    expect(messages.length).toBeGreaterThanOrEqual(300);
    const text = messages.map((m) => m.content).join('\n');
    expect(['圧縮', '要約', '検索', '設定', 'コンテキストの圧縮'].filter((w) => !text.includes(w))).toEqual([]);
  });

  it.each([
    ['coding-agent.en.jsonl', 96_000],
    ['long-conversation.ja.jsonl', 54_400],
  ])('%s reports growing usage that crosses %i (so in-loop compaction triggers)', (file, threshold) => {
    const content = read(file);
    const entries = parseTranscript(content);
    const readings = entries.filter((e) => e.usage).map((e) => e.usage?.prompt_tokens ?? 0);
    expect(readings.length).toBeGreaterThan(20);
    expect(readings.filter((r) => r >= threshold).length).toBeGreaterThanOrEqual(2);
    expect(entries.filter((e) => e.usage).every((e) => e.message.role === 'assistant')).toBe(true);
    // usage ends a batch, so it reaches the workflow with the assistant message it belongs to
    const batches = planBatches(entries, transcriptHash(content));
    expect(batches.filter((b) => b.usage).length).toBe(readings.length);
  });
});
