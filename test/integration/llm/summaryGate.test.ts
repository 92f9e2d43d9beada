// The quality gate of LLM summaries (issue #15 §3) through the workflows, with the real `openai` client talking to a
// fake server: a summary that drops the window's pinned identifiers or the user's constraints is asked for once more,
// naming them; what is still missing is appended under "Critical Context"; a failing or refused re-prompt never
// becomes the summary. The retention shares land on the compaction record, the compactions API, the status and /metrics.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { type ChatMessage, SUMMARY_PREFIX } from '../../../engine/index.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { createMetrics, type Metrics } from '../../../infra/metrics/registry.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { fakeOpenAIProvider } from '../../support/fakes/openaiProvider.js';
import { refusalReply, reply, serverError } from '../../support/fakes/script.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { batch, compactionsOf, newTenant } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;
let metrics: Metrics;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  const { llm } = fakeOpenAIProvider(openai, ['auxiliary: { compression: { timeout: 5 } }']);
  metrics = createMetrics({ defaultMetrics: false });
  stack = await createTestStack({ db: testDb.db, activityDeps: llm, metrics });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});
beforeEach(() => {
  openai.requests.length = 0;
});

const GPT = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };
const CONSTRAINT = 'Never touch the prod-eu cluster.';

/** A window with a user constraint, a user identifier and a tool-call path, then ordinary rounds. */
function transcript(): ChatMessage[] {
  return [
    { role: 'system', content: 'You are a careful coding agent.' },
    { role: 'user', content: `Deploy the billing service to staging. ${CONSTRAINT} Use \`make deploy-staging\`.` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"ops/billing.yaml"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'replicas: 3' },
    { role: 'assistant', content: 'The manifest asks for 3 replicas.' },
    ...[1, 2, 3].flatMap((n): ChatMessage[] => [
      { role: 'user', content: `Next step ${n}, please.` },
      { role: 'assistant', content: `Step ${n} is finished.` },
    ]),
  ];
}

/** Keeps the goal only: every pinned item is missing. */
const FORGETFUL = '## Goal\nDeploy the billing service.\n## Progress\n### Done\n- looked around';

async function compact(...steps: Parameters<OpenAIFake['enqueue']>) {
  const t = await newTenant(testDb.db, { protect_first_n: 1, protect_last_n: 4 });
  const conv = randomUUID();
  await stack.client.submit(t, conv, batch(transcript()), GPT);
  openai.enqueue(...steps);
  const result = await stack.client.compact(t, conv);
  const [record] = await compactionsOf(testDb.db, t);
  const rows = await loadTranscript(testDb.db, t, result.sessionId);
  const summaryRow = rows.find((r) => JSON.stringify(r.message.content).includes(SUMMARY_PREFIX.slice(0, 40)));
  return { result, record: record!, summaryText: JSON.stringify(summaryRow?.message.content ?? null) };
}

function prompts(): string[] {
  return openai.requests.map((r) => String((r.body as { messages: { content: string }[] }).messages[0]?.content));
}

describe('the quality gate of an LLM summary', () => {
  it('a summary that drops identifiers and constraints is asked for once more, naming them; still missing → appended', async () => {
    const { result, record, summaryText } = await compact(reply(FORGETFUL), reply(FORGETFUL));
    expect(result.status).toBe('committed');
    const sent = prompts();
    expect(sent).toHaveLength(2);
    expect(sent[0]).not.toContain('MISSING ITEMS');
    expect(sent[1]).toContain('MISSING ITEMS:');
    expect(sent[1]).toContain(`- User constraint: ${CONSTRAINT}`);
    expect(sent[1]).toContain('- `make deploy-staging`');
    expect(sent[1]).toContain('- `ops/billing.yaml`');
    expect(sent[1]).toContain(`YOUR SUMMARY:\n${FORGETFUL}`);
    const body = record.summary_body ?? '';
    expect(body.startsWith(FORGETFUL)).toBe(true);
    expect(body).toContain(
      `## Critical Context\n- User constraint: ${CONSTRAINT}\n- \`make deploy-staging\`\n- \`ops/billing.yaml\``,
    );
    expect(record).toMatchObject({ summary_backend: 'llm', retention_after: 1 });
    expect(record.retention_before).toBeLessThan(1);
    expect(summaryText).toContain('ops/billing.yaml');
    // The same shares in the manual compaction's answer and in the status (lastCompaction).
    expect(result.retention).toEqual({ before: record.retention_before, after: 1 });
    const status = await stack.client.settled(record.tenant_id, record.conversation_id);
    expect(status.lastCompaction?.retention).toEqual({ before: record.retention_before, after: 1 });
  });

  it('a re-prompt that keeps everything replaces the draft; nothing is appended', async () => {
    const complete =
      `## Goal\nDeploy billing to staging with \`make deploy-staging\`.\n## Constraints & Preferences\n- ${CONSTRAINT}` +
      '\n## Relevant Files\n- ops/billing.yaml (read)';
    const { record } = await compact(reply(FORGETFUL), reply(complete));
    expect(prompts()).toHaveLength(2);
    expect(record.summary_body?.startsWith(complete)).toBe(true);
    expect(record.summary_body).not.toContain('User constraint:');
    expect(record.retention_after).toBe(1);
  });

  it.each([
    ['refused', refusalReply()],
    ['failed', serverError(500)],
  ] as const)(
    'a %s re-prompt never becomes the summary: the draft stands, with the missing items appended',
    async (_name, step) => {
      const { result, record, summaryText } = await compact(reply(FORGETFUL), step);
      expect(result.status).toBe('committed');
      expect(prompts()).toHaveLength(2);
      expect(record.summary_body?.startsWith(FORGETFUL)).toBe(true);
      expect(record.summary_body).toContain(`- User constraint: ${CONSTRAINT}`);
      expect(record.error).toBeNull();
      expect(summaryText).not.toMatch(/sorry|server had an error/i);
    },
  );

  it('a summary that keeps everything is not asked for again; the shares are observed in /metrics', async () => {
    const complete = `## Goal\nRun \`make deploy-staging\`; ops/billing.yaml.\n## Constraints & Preferences\n- ${CONSTRAINT}`;
    const { record } = await compact(reply(complete));
    expect(prompts()).toHaveLength(1);
    expect(record).toMatchObject({ retention_before: 1, retention_after: 1 });
    const scraped = await metrics.registry.metrics();
    expect(scraped).toMatch(/dctx_summary_retention_ratio_count\{stage="before"\} [1-9]/);
    expect(scraped).toMatch(/dctx_summary_retention_ratio_count\{stage="after"\} [1-9]/);
  });
});
