// Property test of compress() (SPEC §8.1, §8.9, §9.6) over random transcripts, configs and summarizers.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ChatMessage,
  type CompressionConfig,
  type ContentPart,
  ContextCompressor,
  DUPLICATE_TOOL_OUTPUT,
  findLatestRealUserIndex,
  hasToolCalls,
  messageText,
  ownText,
  PRUNED_TOOL_OUTPUT,
  planCompaction,
  SUMMARY_PREFIX,
  type Summarizer,
  SYSTEM_NOTE,
} from '../../../engine/index.js';

const SEED = 20_260_101;
const SECRET = 'SECRET-SUMMARIZER-FAILURE-d41d8cd9';
const OLD_BODY = '## Goal\nolder summary body';

// ---------------------------------------------------------------------------------------------------------------
// Generators

const cjk = fc.string({ unit: fc.constantFrom(...'你好世界日本語のテキスト한국어テスト'), maxLength: 40 });
const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 2, arbitrary: cjk },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ' ', '\n\t ', 'edit src/app.ts now', 'Error: failed to open /tmp/x.log'),
  },
  { weight: 1, arbitrary: fc.integer({ min: 3_000, max: 25_000 }).map((n) => `big ${'x'.repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 8_000 }).map((n) => '語'.repeat(n)) },
);
const part: fc.Arbitrary<ContentPart> = fc.oneof(
  text.map((t) => ({ type: 'text' as const, text: t })),
  fc.constant({ type: 'image_url' as const, image_url: { url: 'data:image/png;base64,AAAA' } }),
);
/** Malformed shapes the engine must survive without throwing: missing content, null parts, unknown part types. */
const oddContent = fc.constantFrom(
  undefined as unknown as ChatMessage['content'],
  [null, { type: 'text', text: 'after a null part' }] as unknown as ContentPart[],
  [{ type: 'input_audio', data: 'x' }] as unknown as ContentPart[],
);
const content: fc.Arbitrary<ChatMessage['content']> = fc.oneof(
  { weight: 12, arbitrary: text },
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 4, arbitrary: fc.array(part, { maxLength: 3 }) },
  { weight: 1, arbitrary: oddContent },
);
const summaryContent: fc.Arbitrary<ChatMessage['content']> = fc.oneof(
  fc.constant(`${SUMMARY_PREFIX}\n${OLD_BODY}`),
  text.map((t) => `${SUMMARY_PREFIX}\n${OLD_BODY}\n\n${t}`),
  fc.constant(`[CONTEXT SUMMARY]: legacy body`),
  fc.constant<ContentPart[]>([
    { type: 'text', text: `${SUMMARY_PREFIX}\n${OLD_BODY}` },
    { type: 'text', text: 'own' },
  ]),
);

type Event =
  | { kind: 'user'; content: ChatMessage['content'] }
  | { kind: 'assistant'; content: ChatMessage['content'] }
  | { kind: 'summary'; role: 'user' | 'assistant'; content: ChatMessage['content'] }
  | { kind: 'synthetic'; text: string }
  | { kind: 'round'; content: ChatMessage['content']; answered: boolean[]; reversed: boolean; results: string[] }
  | { kind: 'orphan'; content: ChatMessage['content'] };

const event: fc.Arbitrary<Event> = fc.oneof(
  { weight: 5, arbitrary: content.map((c) => ({ kind: 'user' as const, content: c })) },
  { weight: 4, arbitrary: content.map((c) => ({ kind: 'assistant' as const, content: c })) },
  {
    weight: 5,
    arbitrary: fc
      .record({
        content: fc.oneof(fc.constant(null), fc.constant(''), text),
        answered: fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }),
        reversed: fc.boolean(),
        results: fc.array(fc.oneof(text, fc.constant('same output '.repeat(30))), { minLength: 3, maxLength: 3 }),
      })
      .map((r) => ({ kind: 'round' as const, ...r })),
  },
  { weight: 1, arbitrary: content.map((c) => ({ kind: 'orphan' as const, content: c })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ role: fc.constantFrom('user' as const, 'assistant' as const), content: summaryContent })
      .map((r) => ({ kind: 'summary' as const, ...r })),
  },
  { weight: 1, arbitrary: text.map((t) => ({ kind: 'synthetic' as const, text: `[CONTEXT SUMMARY]: ${t}` })) },
);

/** Every input row carries an extra `_k` property, which the engine must carry along (§1.2). */
function buildTranscript(withSystem: boolean, events: Event[]): ChatMessage[] {
  const rows: ChatMessage[] = withSystem ? [{ role: 'system', content: 'You are a coding agent.' }] : [];
  let id = 0;
  for (const e of events) {
    if (e.kind === 'user') rows.push({ role: 'user', content: e.content });
    else if (e.kind === 'assistant') rows.push({ role: 'assistant', content: e.content });
    else if (e.kind === 'summary') rows.push({ role: e.role, content: e.content });
    else if (e.kind === 'synthetic') rows.push({ role: 'user', content: e.text });
    else if (e.kind === 'orphan') rows.push({ role: 'tool', tool_call_id: `ghost${id++}`, content: e.content });
    else {
      const ids = e.answered.map(() => `call${id++}`);
      const calls = ids.map((callId, i) => ({
        id: callId,
        type: 'function' as const,
        function: { name: `tool_${i}`, arguments: JSON.stringify({ path: `src/f${i}.ts` }) },
      }));
      rows.push({ role: 'assistant', content: e.content, tool_calls: calls });
      const answered = ids.filter((_, i) => e.answered[i]);
      for (const [i, callId] of (e.reversed ? [...answered].reverse() : answered).entries()) {
        rows.push({ role: 'tool', tool_call_id: callId, name: 'tool', content: e.results[i % 3] ?? '' });
      }
    }
  }
  return rows.map((m, k) => ({ ...m, _k: k }) as ChatMessage);
}

const transcript = fc
  .tuple(fc.boolean(), fc.array(event, { minLength: 6, maxLength: 60 }))
  .map(([withSystem, events]) => buildTranscript(withSystem, events));

type SummarizerKind = 'ok' | 'echo' | 'throws' | 'empty' | 'blank' | 'number';
const summarizerKind = fc.constantFrom<SummarizerKind>('ok', 'echo', 'throws', 'empty', 'blank', 'number');

let runCounter = 0;
function summarizerOf(kind: SummarizerKind): Summarizer {
  const body = `## Goal\nfresh summary ${++runCounter}`;
  switch (kind) {
    case 'ok':
      return async () => body;
    case 'echo':
      return async () => `${SUMMARY_PREFIX}\n[CONTEXT SUMMARY]: ${body}`;
    case 'throws':
      return async () => {
        throw new Error(SECRET);
      };
    case 'empty':
      return async () => '';
    case 'blank':
      return async () => '  \n ';
    default:
      return (async () => 42) as unknown as Summarizer;
  }
}

const config: fc.Arbitrary<Partial<CompressionConfig>> = fc.record(
  {
    protectFirstN: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constant('three' as unknown as number)),
    protectLastN: fc.integer({ min: -1, max: 10 }),
    minTailUserMessages: fc.integer({ min: 0, max: 4 }),
    tailMode: fc.constantFrom('lean' as const, 'legacy' as const),
    targetRatio: fc.double({ min: 0, max: 1, noNaN: true }),
    abortOnSummaryFailure: fc.boolean(),
    threshold: fc.oneof(fc.double({ min: 0.01, max: 1, noNaN: true }), fc.constant(Number.NaN)),
  },
  { requiredKeys: [] },
);

const scenario = fc.record({
  input: transcript,
  more: transcript,
  config,
  contextLength: fc.oneof(fc.integer({ min: 1, max: 4_000 }), fc.integer({ min: 4_000, max: 400_000 })),
  summarizer: summarizerKind,
  previousSummary: fc.constantFrom<string | null>(null, OLD_BODY, 'unrelated'),
  force: fc.boolean(),
  focusTopic: fc.option(text, { nil: undefined }),
});

// ---------------------------------------------------------------------------------------------------------------
// Invariants

function assertToolPairs(output: readonly ChatMessage[]): void {
  const callIds = new Set<string>();
  const resultIds = new Set<string>();
  for (const m of output) {
    if (hasToolCalls(m)) for (const c of m.tool_calls ?? []) callIds.add(c.id);
    if (m.role === 'tool') resultIds.add(m.tool_call_id ?? '');
  }
  for (const m of output) if (m.role === 'tool') expect(callIds.has(m.tool_call_id ?? '')).toBe(true);
  output.forEach((m, i) => {
    if (!hasToolCalls(m) || i === output.length - 1) return;
    for (const c of m.tool_calls ?? []) expect(resultIds.has(c.id)).toBe(true);
  });
}

/** The standalone summary is the only user/assistant row without `_k` whose content is the summary text. */
function assertSeam(output: readonly ChatMessage[], summary: string): void {
  const i = output.findIndex((m) => !('_k' in m) && m.content === summary && m.role !== 'tool');
  if (i >= 0) {
    if (i > 0) expect(output[i - 1]?.role).not.toBe(output[i]?.role);
    if (i < output.length - 1) expect(output[i + 1]?.role).not.toBe(output[i]?.role);
    return;
  }
  const merged = output.findIndex((m) => messageText(m).startsWith(summary));
  expect(merged).toBeGreaterThanOrEqual(0);
  if (merged > 0) expect(output[merged - 1]?.role).not.toBe(output[merged]?.role);
}

function assertLatestUserKept(input: readonly ChatMessage[], output: readonly ChatMessage[], previous: string | null) {
  const latest = findLatestRealUserIndex(input, previous);
  if (latest < 0) return;
  const wanted = ownText(input[latest] as ChatMessage, previous);
  expect(output.some((m) => messageText(m).includes(wanted))).toBe(true);
}

const outcomes = { compaction: 0, fallback: 0, reinsert: 0, noop: 0, aborted: 0 };

const keyOf = (m: ChatMessage): number | undefined => (m as { _k?: number })._k;
const withoutContent = ({ content: _content, ...rest }: ChatMessage) => rest;

/** §8.9 invariants 2 and 6: where every kept row comes from, and what may have changed in it. */
function assertProvenance(
  input: readonly ChatMessage[],
  output: readonly ChatMessage[],
  plan: { headEnd: number; cut: number },
  summary: string,
): void {
  const keys = output.map(keyOf).filter((k): k is number => k !== undefined);
  expect(keys).toEqual([...keys].sort((a, b) => a - b));
  for (const m of output) {
    const k = keyOf(m);
    if (k === undefined) continue;
    expect(k < plan.headEnd || k >= plan.cut).toBe(true);
    const original = input[k] as ChatMessage;
    if (m === original) continue;
    expect(withoutContent(m)).toEqual(withoutContent(original));
    const text = messageText(m);
    const allowed =
      (k === 0 && m.role === 'system' && text.includes(SYSTEM_NOTE)) ||
      (m.role === 'tool' &&
        (m.content === DUPLICATE_TOOL_OUTPUT || (k < plan.cut && m.content === PRUNED_TOOL_OUTPUT))) ||
      text.startsWith(summary);
    expect(allowed).toBe(true);
  }
  if (input[0]?.role === 'system') {
    expect(output[0]?.role).toBe('system');
    expect(output.filter((m) => messageText(m).includes(SYSTEM_NOTE))).toHaveLength(1);
  }
}

async function checkOneCompression(
  engine: ContextCompressor,
  input: ChatMessage[],
  options: { force: boolean; focusTopic: string | undefined },
): Promise<ChatMessage[]> {
  const before = structuredClone(input);
  const previous = engine.previousSummary;
  const plan = planCompaction(input, engine.compactionLimits());
  const output = await engine.compress(input, options);
  expect(input).toEqual(before);
  const stats = engine.lastStats;
  expect(stats).not.toBeNull();
  expect(JSON.stringify(output)).not.toContain(SECRET);
  expect(JSON.stringify(stats)).not.toContain(SECRET);
  assertLatestUserKept(input, output, previous);
  if (stats?.noop !== false || stats.aborted) {
    outcomes[stats?.aborted ? 'aborted' : 'noop']++;
    expect(output).toEqual(input);
    return output;
  }
  expect(stats.droppedCount).toBeGreaterThan(0);
  outcomes.compaction++;
  if (stats.fallbackUsed) outcomes.fallback++;
  if (output.some((m) => !('_k' in m) && m.role === 'user' && m.content !== stats.summary)) outcomes.reinsert++;
  assertToolPairs(output);
  assertSeam(output, stats.summary as string);
  assertProvenance(input, output, plan, stats.summary as string);
  return output;
}

describe('compress() properties (§8.9, §9.6)', () => {
  it('holds the output invariants on random transcripts, configs and summarizers', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        let clock = 1_000_000;
        const engine = new ContextCompressor({
          model: 'prop-model',
          contextLength: s.contextLength,
          config: s.config,
          summarize: summarizerOf(s.summarizer),
          now: () => clock,
        });
        engine.previousSummary = s.previousSummary;
        const first = await checkOneCompression(engine, s.input, s);
        clock += 1_000;
        const next = [...first, ...s.more].map((m, k) => ({ ...m, _k: k }) as ChatMessage);
        await checkOneCompression(engine, next, { force: true, focusTopic: undefined });
      }),
      { seed: SEED, numRuns: 4_000 },
    );
    // The generators reach every outcome (guards against a property that only ever sees no-ops).
    expect(outcomes.compaction).toBeGreaterThan(1_000);
    for (const count of Object.values(outcomes)) expect(count).toBeGreaterThan(0);
  });
});
