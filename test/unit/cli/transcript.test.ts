// Transcript parsing, idempotency keys and batching of `dctx import` (clients/transcript.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  defaultConversationId,
  idempotencyKeyOf,
  parseTranscript,
  planBatches,
  type TranscriptEntry,
  TranscriptError,
  transcriptHash,
} from '../../../clients/transcript.js';

const jsonl = (...lines: unknown[]) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n');

const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });
const toolCall = (id: string) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'run_command', arguments: '{"command":"npm test"}' } }],
});
const toolResult = (id: string, content: string) => ({ role: 'tool', tool_call_id: id, name: 'run_command', content });

function parseError(text: string, options?: Parameters<typeof parseTranscript>[1]): string {
  try {
    parseTranscript(text, options);
  } catch (err) {
    expect(err).toBeInstanceOf(TranscriptError);
    return (err as Error).message;
  }
  throw new Error('expected a TranscriptError');
}

describe('parseTranscript', () => {
  it('reads bare messages and {message, usage} lines with their line numbers', () => {
    const text = jsonl(user('fix the tests'), toolCall('call_1'), toolResult('call_1', 'FAIL test/money.test.ts'), {
      message: assistant('Done.'),
      usage: { prompt_tokens: 1200, completion_tokens: 30 },
    });
    const entries = parseTranscript(text);
    expect(entries.map((e) => e.line)).toEqual([1, 2, 3, 4]);
    expect(entries[0]?.message).toEqual(user('fix the tests'));
    expect(entries[2]?.message).toEqual(toolResult('call_1', 'FAIL test/money.test.ts'));
    expect(entries[3]).toEqual({
      line: 4,
      message: assistant('Done.'),
      usage: { prompt_tokens: 1200, completion_tokens: 30 },
    });
    expect(entries[0]?.usage).toBeUndefined();
  });

  it('skips blank lines but keeps counting them, and accepts CRLF and a BOM', () => {
    const text = `\uFEFF${JSON.stringify(user('a'))}\r\n\r\n   \n${JSON.stringify(assistant('b'))}\r\n`;
    const entries = parseTranscript(text);
    expect(entries.map((e) => [e.line, e.message.content])).toEqual([
      [1, 'a'],
      [4, 'b'],
    ]);
  });

  it('takes usage from a bare message (removing it from the message) and honours a custom usage field', () => {
    const bare = parseTranscript(jsonl({ ...assistant('x'), usage: { prompt_tokens: 5 } }));
    expect(bare[0]).toEqual({ line: 1, message: assistant('x'), usage: { prompt_tokens: 5 } });
    const custom = parseTranscript(jsonl({ message: assistant('y'), tokens: { prompt_tokens: 7 }, usage: 'ignored' }), {
      usageField: 'tokens',
    });
    expect(custom[0]?.usage).toEqual({ prompt_tokens: 7 });
  });

  it('keeps extra message properties and fills in content: null for tool-call-only assistant messages', () => {
    const { content: _omitted, ...noContent } = toolCall('c1');
    const entries = parseTranscript(jsonl({ ...noContent, reasoning: 'think' }));
    expect(entries[0]?.message).toMatchObject({ content: null, reasoning: 'think' });
  });

  it('names the line of invalid JSON', () => {
    const message = parseError(jsonl(user('ok'), user('ok'), '{"role": "user", "content": '));
    expect(message).toMatch(/^line 3: invalid JSON \(/);
  });

  it('names the file and line when the file name is given', () => {
    expect(parseError(jsonl(user('ok'), '[1, 2]'), { fileName: 'chat.jsonl' })).toBe(
      'chat.jsonl:2: expected a JSON object (a chat message or {"message": ..., "usage": ...})',
    );
  });

  it.each([
    [{ role: 'robot', content: 'x' }, 'line 2: message.role must be one of system, user, assistant, tool'],
    [{ role: 'user' }, 'line 2: message.content is required (use null for none)'],
    [{ role: 'tool', content: 'out' }, 'line 2: message.tool_call_id is required on tool messages'],
    [{ role: 'user', content: 3 }, 'line 2: message.content must be a string, an array of parts or null'],
    [{ message: 'hello' }, 'line 2: "message" must be a chat message object'],
    [
      { message: assistant('x'), usage: { prompt_tokens: -1 } },
      'line 2: usage.prompt_tokens must be an integer between 0 and 2147483647',
    ],
    [{ message: assistant('x'), usage: 12 }, 'line 2: usage must be an object'],
    [
      {
        role: 'user',
        content: 'x',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      'line 2: message.tool_calls is only allowed on assistant messages',
    ],
  ])('rejects %j with a message naming the line', (bad, expected) => {
    expect(parseError(jsonl(user('first'), bad))).toBe(expected);
  });

  it('returns nothing for an empty file', () => {
    expect(parseTranscript('')).toEqual([]);
    expect(parseTranscript('\n\n')).toEqual([]);
  });
});

describe('idempotency keys', () => {
  it('are <file-hash>:<line>, with the hash a deterministic function of the content', () => {
    const text = jsonl(user('a'), assistant('b'));
    const hash = transcriptHash(text);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    expect(transcriptHash(Buffer.from(text))).toBe(hash);
    expect(transcriptHash(`${text}\n`)).not.toBe(hash);
    expect(idempotencyKeyOf(hash, 12)).toBe(`${hash}:12`);
    const keys = planBatches(parseTranscript(text), hash).flatMap((b) => b.messages.map((m) => m.idempotencyKey));
    expect(keys).toEqual([`${hash}:1`, `${hash}:2`]);
    // the same file planned again gives the same keys: a re-import is a no-op on the workflow side
    expect(
      planBatches(parseTranscript(text), transcriptHash(text)).flatMap((b) => b.messages.map((m) => m.idempotencyKey)),
    ).toEqual(keys);
  });

  it('derive a default conversation id the gateway accepts', () => {
    const pattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
    const hash = transcriptHash('x');
    expect(defaultConversationId('/tmp/samples/coding-agent.en.jsonl', hash)).toBe(
      `coding-agent.en-${hash.slice(0, 12)}`,
    );
    expect(defaultConversationId('/tmp/__ my chat (1).jsonl', hash)).toMatch(pattern);
    expect(defaultConversationId('/tmp/会話.jsonl', hash)).toBe(`import-${hash.slice(0, 12)}`);
    expect(defaultConversationId(`/tmp/${'a'.repeat(300)}.jsonl`, hash)).toMatch(pattern);
  });
});

describe('planBatches', () => {
  const entriesOf = (...messages: unknown[]) => parseTranscript(jsonl(...messages));

  it('cuts at the batch size', () => {
    const entries = entriesOf(user('go'), ...Array.from({ length: 6 }, (_, i) => assistant(`step ${i}`)));
    const batches = planBatches(entries, 'h', { batchSize: 3 });
    expect(batches.map((b) => b.messages.length)).toEqual([3, 3, 1]);
    expect(batches.map((b) => [b.firstLine, b.lastLine])).toEqual([
      [1, 3],
      [4, 6],
      [7, 7],
    ]);
  });

  it('starts a new batch at each user message (a new turn)', () => {
    const batches = planBatches(entriesOf(user('a'), assistant('b'), user('c'), assistant('d'), assistant('e')), 'h');
    expect(batches.map((b) => b.messages.map((m) => m.message.content))).toEqual([
      ['a', 'b'],
      ['c', 'd', 'e'],
    ]);
  });

  it('attaches usage to the batch that ends at the message carrying it', () => {
    const entries = entriesOf(
      user('fix it'),
      toolCall('c1'),
      toolResult('c1', 'FAIL'),
      { message: assistant('Found it.'), usage: { prompt_tokens: 900 } },
      toolCall('c2'),
      { message: toolResult('c2', 'PASS'), usage: { prompt_tokens: 1500 } },
      assistant('All green.'),
    );
    const batches = planBatches(entries, 'h');
    expect(batches.map((b) => [b.firstLine, b.lastLine, b.usage?.prompt_tokens])).toEqual([
      [1, 4, 900],
      [5, 6, 1500],
      [7, 7, undefined],
    ]);
  });

  it('keeps each batch under the byte limit', () => {
    const big = 'x'.repeat(1000);
    const entries = entriesOf(user('go'), ...Array.from({ length: 10 }, () => assistant(big)));
    const batches = planBatches(entries, 'h', { maxBatchBytes: 3500 });
    expect(batches.every((b) => Buffer.byteLength(JSON.stringify(b.messages)) <= 3500 + b.messages.length)).toBe(true);
    expect(batches.reduce((n, b) => n + b.messages.length, 0)).toBe(11);
    expect(batches.length).toBeGreaterThan(3);
  });

  it('refuses a batch size outside 1..500', () => {
    expect(() => planBatches([], 'h', { batchSize: 0 })).toThrow(/between 1 and 500/);
    expect(() => planBatches([], 'h', { batchSize: 501 })).toThrow(/between 1 and 500/);
  });

  it('keeps every message once, in order, whatever the shape of the transcript', () => {
    const entryArb = fc.record({
      role: fc.constantFrom('user', 'assistant', 'tool'),
      size: fc.integer({ min: 0, max: 400 }),
      usage: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(entryArb, { maxLength: 80 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 200, max: 5000 }),
        (rows, batchSize, maxBatchBytes) => {
          const entries: TranscriptEntry[] = rows.map((r, i) => ({
            line: i * 2 + 1,
            message:
              r.role === 'tool'
                ? { role: 'tool', tool_call_id: 'c', content: 'o'.repeat(r.size) }
                : { role: r.role as 'user' | 'assistant', content: 'm'.repeat(r.size) },
            ...(r.usage ? { usage: { prompt_tokens: r.usage } } : {}),
          }));
          const batches = planBatches(entries, 'h', { batchSize, maxBatchBytes });
          const keys = batches.flatMap((b) => b.messages.map((m) => m.idempotencyKey));
          expect(keys).toEqual(entries.map((e) => `h:${e.line}`));
          for (const b of batches) {
            expect(b.messages.length).toBeGreaterThan(0);
            expect(b.messages.length).toBeLessThanOrEqual(batchSize);
            const lastEntry = entries.find((e) => e.line === b.lastLine);
            expect(b.usage).toEqual(lastEntry?.usage);
            // a user message only ever opens a batch
            expect(b.messages.slice(1).some((m) => m.message.role === 'user')).toBe(false);
          }
        },
      ),
    );
  });
});
