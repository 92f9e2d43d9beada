// Drop-in proxy overhead (`npm run bench:proxy`, issue #12): the official `openai` SDK calls the fake OpenAI server
// directly, and through the gateway's POST /v1/chat/completions to the same fake (0 ms model), in the same run,
// alternating request by request. Non-streaming latency and streaming time to the first chunk, for a new
// conversation on every request (2 messages) and for a conversation that already stores a 200-message history (each
// request adds a question; the reply is stored). The gateway runs in this process over a real Temporal dev server,
// worker and PostgreSQL database, all started here and removed at exit. No compaction happens: the threshold is far.
//
// Options: BENCH_RUNS (default 200 measured requests per case and path), BENCH_WARMUP (30).
// Goal (issue #12): overhead p50 <= 10 ms non-streaming and for the time to first byte, without compaction.
import { randomUUID } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import OpenAI from 'openai';
import { createMetrics } from '../infra/metrics/registry.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { startDevServer } from '../infra/temporal/devServer.js';
import { startOpenAIFake } from '../test/support/fakes/openaiFake.js';
import { fakeOpenAIProvider } from '../test/support/fakes/openaiProvider.js';
import { reply } from '../test/support/fakes/script.js';
import { createTestDatabase } from '../test/support/harness/db.js';
import { createStackAt } from '../test/support/harness/stackAt.js';
import { buildGateway } from '../workers/gateway/app.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';
import { percentileOf } from './load/stats.js';

Runtime.install({ logger: new DefaultLogger('ERROR') });
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 30);
const GOAL_MS = 10;
const HISTORY = 200;

type Message = OpenAI.Chat.ChatCompletionMessageParam;
const sentence = (i: number) =>
  `Step ${i}: the build of module ${i % 17} failed with exit code ${i % 5}; the log says the cache was stale.`;

interface Sample {
  ms: number;
  ttfbMs: number;
}

/** One request: the whole latency, or for a stream the time to its first chunk (then read to the end). */
async function timed(client: OpenAI, messages: Message[], stream: boolean, headers: Record<string, string>) {
  const started = performance.now();
  if (!stream) {
    const completion = await client.chat.completions.create({ model: 'gpt-test', messages }, { headers });
    const ms = performance.now() - started;
    return { sample: { ms, ttfbMs: ms }, reply: completion.choices[0]?.message as Message };
  }
  const chunks = await client.chat.completions.create({ model: 'gpt-test', messages, stream: true }, { headers });
  let ttfbMs = Number.NaN;
  let text = '';
  for await (const chunk of chunks) {
    if (Number.isNaN(ttfbMs)) ttfbMs = performance.now() - started;
    text += chunk.choices[0]?.delta.content ?? '';
  }
  return {
    sample: { ms: performance.now() - started, ttfbMs },
    reply: { role: 'assistant', content: text } as Message,
  };
}

const fmt = (v: number) => v.toFixed(1).padStart(7);
const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentileOf(sorted, 50), p99: percentileOf(sorted, 99) };
};

async function main(): Promise<void> {
  const databaseUrl = await resolveDatabaseUrl();
  const server = await startDevServer({ searchAttributes: SEARCH_ATTRIBUTES, uiPort: false });
  const testDb = await createTestDatabase(databaseUrl);
  const fake = await startOpenAIFake();
  const provider = fakeOpenAIProvider(fake);
  const { summarizerFor: _unused, ...llm } = provider.llm;
  const stack = await createStackAt({
    address: server.address,
    namespace: server.namespace,
    db: testDb.db,
    activityDeps: llm,
  });
  const adminKey = `admin-${randomUUID()}`;
  const app = await buildGateway({
    db: testDb.db,
    conversations: stack.client,
    metrics: createMetrics({ defaultMetrics: false }),
    adminKey,
    cacheTtl: '5m',
    providers: llm.providers,
    env: provider.keys,
    defaultModel: { model: 'gpt-test', provider: 'openai', contextLength: null },
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const admin = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
    await fetch(`${url}/v1/tenants`, { method: 'POST', headers: admin, body: JSON.stringify({ id: 'bench' }) });
    const issued = await fetch(`${url}/v1/tenants/bench/keys`, { method: 'POST', headers: admin, body: '{}' });
    const { key } = (await issued.json()) as { key: string };
    const direct = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-openai', maxRetries: 0 });
    const gateway = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });

    console.log(`bench:proxy — ${RUNS} requests per case and path after ${WARMUP} warm-ups, 0 ms model (2 cores)`);
    console.log('case                                 | direct p50    p99 | gateway p50    p99 | overhead p50    p99');
    const summary: string[] = [];
    for (const withHistory of [false, true]) {
      for (const stream of [false, true]) {
        const viaDirect: Sample[] = [];
        const viaGateway: Sample[] = [];
        const conversation = `bench-${randomUUID()}`;
        const history: Message[] = [{ role: 'system', content: 'You are the build assistant.' }];
        for (let i = 0; withHistory && history.length < HISTORY; i++) {
          history.push({ role: i % 2 === 0 ? 'user' : 'assistant', content: sentence(i) });
        }
        for (let i = 0; i < WARMUP + RUNS; i++) {
          const messages: Message[] = withHistory
            ? [...history, { role: 'user', content: sentence(HISTORY + i) }]
            : [
                { role: 'system', content: 'You are the build assistant.' },
                { role: 'user', content: `${sentence(i)} ${randomUUID()}` },
              ];
          fake.enqueue(
            reply(`Answer ${i}: rebuild module ${i % 17}.`),
            reply(`Answer ${i}: rebuild module ${i % 17}.`),
          );
          const headers: Record<string, string> = withHistory ? { 'x-conversation-id': conversation } : {};
          const a = await timed(direct, messages, stream, {});
          const b = await timed(gateway, messages, stream, headers);
          if (withHistory) history.push(messages.at(-1) as Message, b.reply);
          if (i >= WARMUP) {
            viaDirect.push(a.sample);
            viaGateway.push(b.sample);
          }
        }
        const pick = (s: Sample) => (stream ? s.ttfbMs : s.ms);
        const d = stats(viaDirect.map(pick));
        const g = stats(viaGateway.map(pick));
        const overhead = { p50: g.p50 - d.p50, p99: g.p99 - d.p99 };
        const label = `${stream ? 'streamed, time to first chunk' : 'non-streaming latency'}${withHistory ? `, ${HISTORY}-msg history` : ', new conversation'}`;
        console.log(
          `${label.padEnd(36)} | ${fmt(d.p50)} ${fmt(d.p99)} | ${fmt(g.p50)} ${fmt(g.p99)} | ${fmt(overhead.p50)} ${fmt(overhead.p99)}`,
        );
        summary.push(
          `${label}: overhead p50 ${overhead.p50.toFixed(1)} ms (goal <= ${GOAL_MS} ms: ` +
            `${overhead.p50 <= GOAL_MS ? 'met' : 'MISSED'}); gateway/direct at p50 ${(g.p50 / d.p50).toFixed(1)}x`,
        );
      }
    }
    console.log(
      `\nGoal (issue #12): overhead p50 <= ${GOAL_MS} ms, and TTFB overhead p50 <= ${GOAL_MS} ms, without compaction`,
    );
    console.log(summary.join('\n'));
  } finally {
    await app.close();
    await stack.close();
    await fake.close();
    await testDb.drop();
    await server.stop();
  }
}

await main();
