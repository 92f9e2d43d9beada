// The model side of the chat mode: one fake OpenAI server (test/support/fakes/openaiFake.ts: real HTTP, the official SDK
// talks to it) per chat conversation, so each turn's reply — and the prompt size its `usage` reports — is scripted
// for exactly that conversation, and one more fake for the summaries (auxiliary.compression.provider), whose replies
// take `summaryDelayMs` (the 5 s summariser). The chat fakes answer at once (0 ms model). Also measures the fakes'
// own time: the same request the product sent, posted straight to the fake from here.
import { type OpenAIFake, startOpenAIFake } from '../../test/support/fakes/openaiFake.js';
import { reply } from '../../test/support/fakes/script.js';
import { JsonHttp } from './http.js';

export const FAKE_KEY_ENV = 'BENCH_FAKE_OPENAI_KEY';
export const FAKE_KEY = 'sk-bench-load';
export const CHAT_MODEL = 'gpt-bench';
export const SUMMARY_PROVIDER = 'summaries';

export interface ChatFakes {
  chat: OpenAIFake[];
  summary: OpenAIFake;
  /** Summary requests answered (or in progress) so far. */
  summaryCalls(): number;
  /** The last chat request body each fake received (for the direct timing). */
  lastBodies: (unknown | null)[];
  /** Scripts the next reply of conversation `index` with a reported prompt of `promptTokens`. */
  script(index: number, promptTokens: number): void;
  /** Forgets the recorded requests of conversation `index` but its last body (the fakes keep every request). */
  trim(index: number): void;
  configYaml(extra?: string[]): string;
  close(): Promise<void>;
}

const REPLY = (turn: number) =>
  `Here is what I found (turn ${turn}). The handler retries the request after a timeout, the cache keeps the ` +
  'last response per user, and the migration adds the index the query needs. Next I would run the test suite ' +
  'again and check the slow query log.';

const SUMMARY = (n: number) =>
  `## Goal\nKeep the service answering under load (summary ${n}).\n## Constraints & Preferences\n- no downtime\n` +
  `## Progress\n### Done\n- traced the slow path ${n} times\n### In Progress\n- the cache\n### Blocked\n- none\n` +
  `## Key Decisions\n- retries with backoff\n## Relevant Files\n- src/app/routes.ts\n## Next Steps\n- run the suite\n` +
  `## Critical Context\n- threshold reached at turn ${n}`;

export async function startChatFakes(count: number, summaryDelayMs: number): Promise<ChatFakes> {
  const chat = await Promise.all(Array.from({ length: count }, () => startOpenAIFake({ expectedApiKey: FAKE_KEY })));
  const summary = await startOpenAIFake({ expectedApiKey: FAKE_KEY });
  let summaries = 0;
  let turns = 0;
  let seen = 0;
  // The summary fake's queue is kept full; each reply differs (the fixed-point brake compares summaries).
  const feeder = setInterval(() => {
    seen += summary.requests.length;
    summary.requests.length = 0;
    while (summary.pending() < 20) summary.enqueue(reply(SUMMARY(++summaries), { delayMs: summaryDelayMs }));
  }, 50);
  while (summary.pending() < 20) summary.enqueue(reply(SUMMARY(++summaries), { delayMs: summaryDelayMs }));
  const lastBodies: (unknown | null)[] = chat.map(() => null);
  return {
    chat,
    summary,
    summaryCalls: () => seen + summary.requests.length,
    lastBodies,
    script: (index, promptTokens) => {
      const completion = 60;
      chat[index]!.enqueue(
        reply(REPLY(++turns), {
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completion,
            total_tokens: promptTokens + completion,
            prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
            completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
          },
        }),
      );
    },
    trim: (index) => {
      const fake = chat[index]!;
      const last = fake.requests.at(-1);
      if (last) lastBodies[index] = last.body;
      fake.requests.length = 0;
    },
    configYaml: (extra = []) =>
      [
        `model: { default: ${CHAT_MODEL}, provider: chat0 }`,
        'providers:',
        ...chat.map(
          (fake, i) =>
            `  chat${i}: { base_url: "${fake.baseURL}", api_key_env: ${FAKE_KEY_ENV}, models: [${CHAT_MODEL}] }`,
        ),
        `  ${SUMMARY_PROVIDER}: { base_url: "${summary.baseURL}", api_key_env: ${FAKE_KEY_ENV} }`,
        `auxiliary: { compression: { provider: ${SUMMARY_PROVIDER} } }`,
        ...extra,
      ].join('\n'),
    close: async () => {
      clearInterval(feeder);
      await Promise.all([...chat, summary].map((fake) => fake.close()));
    },
  };
}

/** The fakes' own time: `perFake` requests with the last body the product sent each fake, straight from here. */
export async function timeFakesDirectly(fakes: ChatFakes, perFake: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < fakes.chat.length; i++) {
    const body = fakes.lastBodies[i];
    if (!body) continue;
    const http = new JsonHttp(fakes.chat[i]!.origin, 1);
    for (let n = 0; n < perFake; n++) {
      fakes.script(i, 1_000);
      const answer = await http.request('POST', '/v1/chat/completions', { token: FAKE_KEY, body, timeoutMs: 10_000 });
      if (answer.status === 200) samples.push(answer.ms);
    }
    fakes.trim(i);
    http.close();
  }
  return samples;
}
