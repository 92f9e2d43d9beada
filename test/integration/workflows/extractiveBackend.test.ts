// SPEC §19 `compression.summary_backend: extractive` (issue #15 §2) on the real services: a tenant that chooses it,
// or the default `local` with no summary provider configured, gets a committed summary written by the extractive
// summariser — no LLM is called, it is not the §9.5 fallback — and the record says who wrote it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Summarizer } from '../../../engine/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { activeTranscript, agentTranscript, batch, compactionsOf, newTenant } from './transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let llmCalls = 0;
const summarizer: Summarizer = async () => {
  llmCalls++;
  return '## Goal\nfrom the LLM';
};

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});

describe('summary_backend: extractive, and local without a provider', () => {
  it('commits the extractive summary of the window without calling the LLM', async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4, summary_backend: 'extractive' });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), { model: 'acme-chat', contextLength: 100_000 });
    await stack.client.sync(t, conv);
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');
    expect(llmCalls).toBe(0);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record?.summary_backend).toBe('extractive');
    expect(record?.fallback_used).toBe(false);
    const body = record?.summary_body ?? '';
    expect(body.startsWith('## Goal')).toBe(true);
    expect(body).not.toContain('Summary generation was unavailable');
    // The window's files survive as identifiers.
    expect(body).toContain('src/module_1.ts');
    const live = await activeTranscript(testDb.db, t, result.sessionId);
    expect(live.filter((r) => r.summary_body === body)).toHaveLength(1);
  });

  it('`local` with no summary provider configured uses the extractive summariser, not the §9.5 fallback', async () => {
    await stack.startWorker({ summarizer: null });
    try {
      const t = await newTenant(testDb.db, { protect_last_n: 4 });
      const conv = randomUUID();
      await stack.client.submit(t, conv, batch(agentTranscript(8)), { model: 'acme-chat', contextLength: 100_000 });
      await stack.client.sync(t, conv);
      const result = await stack.client.compact(t, conv);
      expect(result.status).toBe('committed');
      expect(result.notice ?? '').not.toContain('Summary generation failed');
      const [record] = await compactionsOf(testDb.db, t);
      expect(record).toMatchObject({ summary_backend: 'extractive', fallback_used: false, failure_class: null });
      expect(record?.summary_body).toContain('src/module_1.ts');
      expect(record?.summary_body).not.toContain('Summary generation was unavailable');
    } finally {
      await stack.startWorker();
    }
  });
});
