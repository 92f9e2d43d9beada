// Benchmark of ContextCompressor.compress() with an instant summarizer (`npm run bench:engine`).
// Synthetic transcripts of 1k, 10k and 50k messages (mixed tool rounds, ~200 tokens per message) on a 1M window,
// so nearly the whole transcript is the window. Cold runs use fresh message objects; the warm line re-compresses
// the same array (the engine keeps no per-message memo, so warm differs from cold only by CPU caches). Fresh
// transcripts come from JSON.parse, like transcripts loaded from the database or an HTTP body (flat strings;
// building them with template literals would leave rope strings that the first scan flattens).
// Prints ms per call (median), messages/s and the 50k/1k scaling ratio.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type ChatMessage, ContextCompressor } from '../engine/index.js';

// A full collection before each timed call, so that a call does not pay for the garbage (and the young-generation
// promotion) left by building its input or by the previous call.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const SIZES = [1_000, 10_000, 50_000] as const;
const CONTEXT_LENGTH = 1_000_000;
const RUNS: Record<number, number> = { 1000: 31, 10000: 15, 50000: 7 };
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'config', 'value', 'result', 'error', 'module', 'index'];

/** ~800 ASCII characters (~200 tokens) in lines of about 80 characters, different for every message. */
function filler(seed: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < 760; i++) {
    const word = `${WORDS[(seed + i * 7) % WORDS.length]}${(seed * 31 + i) % 997}`;
    parts.push(i % 12 === 11 ? `${word}\n` : word);
    length += word.length + 1;
  }
  return parts.join(' ');
}

/** system, then rounds of: user, assistant with 1–2 tool calls, their results, assistant answer. */
function transcript(size: number): ChatMessage[] {
  const rows: ChatMessage[] = [{ role: 'system', content: `You are a coding agent. ${filler(0)}` }];
  let id = 0;
  while (rows.length < size) {
    const n = rows.length;
    rows.push({ role: 'user', content: `Please continue with step ${n}. ${filler(n)}` });
    const calls = Array.from({ length: 1 + (n % 2) }, () => {
      const callId = `call_${id++}`;
      return {
        id: callId,
        type: 'function' as const,
        function: { name: 'read_file', arguments: `{"path":"src/file${id}.ts"}` },
      };
    });
    rows.push({ role: 'assistant', content: null, tool_calls: calls });
    for (const c of calls) rows.push({ role: 'tool', tool_call_id: c.id, name: 'read_file', content: filler(n + 1) });
    rows.push({ role: 'assistant', content: `Done with step ${n}. ${filler(n + 2)}` });
  }
  return rows.slice(0, size);
}

function newEngine(): ContextCompressor {
  return new ContextCompressor({
    model: 'bench-model',
    contextLength: CONTEXT_LENGTH,
    summarize: async () => '## Goal\nbenchmark summary',
    now: () => 0,
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function timeCompress(messages: ChatMessage[]): Promise<number> {
  const engine = newEngine();
  collectGarbage();
  const start = performance.now();
  const out = await engine.compress(messages);
  const elapsed = performance.now() - start;
  if (engine.lastStats?.noop !== false || out.length >= messages.length) throw new Error('benchmark did not compact');
  return elapsed;
}

interface Result {
  cold: number;
  warm: number;
  window: number;
  inputMb: number;
  promptMb: number;
}

async function measure(size: number): Promise<Result> {
  const runs = RUNS[size] ?? 5;
  const json = JSON.stringify(transcript(size));
  const fresh = () => JSON.parse(json) as ChatMessage[];
  await timeCompress(fresh()); // JIT warm-up
  const cold: number[] = [];
  for (let i = 0; i < runs; i++) cold.push(await timeCompress(fresh()));
  const shared = fresh();
  await timeCompress(shared);
  const warm: number[] = [];
  for (let i = 0; i < runs; i++) warm.push(await timeCompress(shared));
  let promptChars = 0;
  const engine = new ContextCompressor({
    model: 'bench-model',
    contextLength: CONTEXT_LENGTH,
    summarize: async (request) => {
      promptChars = request.prompt.length;
      return '## Goal\nbenchmark summary';
    },
  });
  await engine.compress(shared);
  return {
    cold: median(cold),
    warm: median(warm),
    window: engine.lastStats?.droppedCount ?? 0,
    inputMb: json.length / 1e6,
    promptMb: promptChars / 1e6,
  };
}

function row(cells: (string | number)[]): string {
  return cells.map((c, i) => (i === 0 ? String(c).padEnd(10) : String(c).padStart(14))).join('');
}

async function main(): Promise<void> {
  console.log(`compress() with an instant summarizer, context length ${CONTEXT_LENGTH.toLocaleString('en-US')}`);
  console.log(
    row(['messages', 'input MB', 'window rows', 'prompt MB', 'cold ms', 'cold msg/s', 'warm ms', 'warm msg/s']),
  );
  const results = new Map<number, Result>();
  for (const size of SIZES) {
    const r = await measure(size);
    results.set(size, r);
    const rate = (ms: number) => Math.round((size / ms) * 1000).toLocaleString('en-US');
    console.log(
      row([
        size,
        r.inputMb.toFixed(1),
        r.window,
        r.promptMb.toFixed(1),
        r.cold.toFixed(2),
        rate(r.cold),
        r.warm.toFixed(2),
        rate(r.warm),
      ]),
    );
  }
  const ratio = (a: number, b: number, key: 'cold' | 'warm') =>
    ((results.get(a) as Result)[key] / (results.get(b) as Result)[key]).toFixed(1);
  console.log(
    `scaling 50k/1k: cold ${ratio(50_000, 1_000, 'cold')}x, warm ${ratio(50_000, 1_000, 'warm')}x (linear = 50x)`,
  );
  console.log(
    `scaling 50k/10k: cold ${ratio(50_000, 10_000, 'cold')}x, warm ${ratio(50_000, 10_000, 'warm')}x (linear = 5x)`,
  );
}

await main();
