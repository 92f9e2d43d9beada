// The HTTP gateway end to end on the real services: auth, conversations, compaction, context, bad input.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Summarizer } from '../../../engine/index.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, allRows, keyed } from '../workflows/transcript.js';

/** Conversations on this model have a summary provider that is down (SPEC §9); every other model has none. */
const PROVIDER_DOWN_MODEL = 'acme-provider-down';
const providerDown: Summarizer = async () => {
  throw new Error('summary provider unavailable (503)');
};

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness({
    bodyLimit: 256 * 1024,
    stack: { activityDeps: { summarizerFor: ({ model }) => (model === PROVIDER_DOWN_MODEL ? providerDown : null) } },
  });
});
afterAll(async () => {
  await gw?.close();
});

const call = (method: string, path: string, key: string | null, body?: unknown, raw?: string) =>
  gw.call(method, path, key, body, raw === undefined ? {} : { raw });

describe('auth', () => {
  it('refuses a missing, malformed or wrong key, and tenant keys on admin routes', async () => {
    expect((await call('GET', '/v1/compactions', null)).status).toBe(401);
    const wrong = await call('GET', '/v1/compactions', 'dctx_not-a-real-key');
    expect(wrong.status).toBe(401);
    expect(wrong.json.message).toBe('invalid API key');
    const { key } = await gw.tenant();
    const admin = await call('POST', '/v1/tenants', key, { id: 'sneaky' });
    expect(admin.status).toBe(403);
  });
});

describe('conversation flow', () => {
  it('create → post messages → compact → status, messages with archived rows, compactions list', async () => {
    const { id: tenantId, key } = await gw.tenant({ protect_last_n: 6 });
    const created = await call('POST', '/v1/conversations', key, {
      model: 'acme-chat',
      contextLength: 200_000,
      title: 'Demo',
    });
    expect(created.status).toBe(201);
    const conv = created.json.conversationId as string;
    const messages = keyed(agentTranscript(6, { tag: 'kubectl rollout' }));
    const posted = await call('POST', `/v1/conversations/${conv}/messages`, key, { messages });
    expect(posted.status).toBe(202);
    expect(posted.json).toEqual({ accepted: messages.length, stored: messages.length, duplicates: 0 });
    const again = await call('POST', `/v1/conversations/${conv}/messages`, key, { messages, wait: true });
    expect(again.status).toBe(200);
    expect(again.json.status.activeMessages).toBe(messages.length); // duplicates ignored

    const compacted = await call('POST', `/v1/conversations/${conv}/compact`, key, { focusTopic: 'rollout' });
    expect(compacted.status).toBe(200);
    // No summary provider in this harness: `local` uses the extractive summariser (SPEC §19), a committed summary.
    expect(compacted.json.status).toBe('committed');
    const status = await call('GET', `/v1/conversations/${conv}/status`, key);
    expect(status.json.compressionCount).toBe(1);

    const active = await call('GET', `/v1/conversations/${conv}/messages`, key);
    const all = await call('GET', `/v1/conversations/${conv}/messages?archived=true`, key);
    expect(active.json.messages.length).toBe(status.json.activeMessages);
    expect(all.json.messages.length).toBeGreaterThan(active.json.messages.length);
    expect(all.json.messages.filter((m: any) => m.compacted).length).toBeGreaterThan(0);

    const listed = await call('GET', '/v1/compactions?status=committed', key);
    expect(listed.json.compactions.map((c: any) => c.id)).toEqual([compacted.json.compactionId]);
    expect(listed.json.compactions[0]).toMatchObject({
      conversationId: conv,
      trigger: 'manual',
      replayable: false,
      summaryBackend: 'extractive',
      retentionBefore: null, // the quality gate is for LLM summaries (issue #15 §3)
      retentionAfter: null,
      engine: 'compressor',
      engineFallback: null,
    });
    expect((await call('GET', '/v1/compactions?status=fallback', key)).json.compactions).toEqual([]);
    // Only a fallback summary is replayable (SPEC §13.7): refused before anything runs, nothing changes.
    const replay = await call('POST', `/v1/compactions/${compacted.json.compactionId}/replay`, key);
    expect(replay.status).toBe(409);
    expect(replay.json.message).toContain('only compactions that used the fallback summary can be replayed');
    expect((await allRows(gw.testDb.db, tenantId)).length).toBe(all.json.messages.length);
  });

  it('a tenant policy naming the shipped archive-only plugin: compacted by it, listed with its name (SPEC §10.3)', async () => {
    const { key, id } = await gw.tenant();
    const bad = await call('PUT', `/v1/tenants/${id}/policy`, gw.adminKey, { context: { engine: 'Archive Only' } });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('Invalid configuration: context.engine: expected string matching');
    const set = await call('PUT', `/v1/tenants/${id}/policy`, gw.adminKey, {
      protect_last_n: 2,
      context: { engine: 'archive-only' },
    });
    expect(set.status).toBe(200);
    const conv = (await call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 100_000 })).json
      .conversationId;
    const turns = Array.from({ length: 12 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: `turn ${i} about the rollout`,
    }));
    expect(
      (await call('POST', `/v1/conversations/${conv}/messages`, key, { messages: keyed(turns as never) })).status,
    ).toBe(202);
    const compacted = await call('POST', `/v1/conversations/${conv}/compact`, key, {});
    expect(compacted.json.status).toBe('committed');
    const [listed] = (await call('GET', '/v1/compactions', key)).json.compactions;
    expect(listed).toMatchObject({ engine: 'archive-only', engineFallback: null, summaryBackend: null });
    const active = (await call('GET', `/v1/conversations/${conv}/messages`, key)).json.messages;
    // The first 3 and the last 2 turns, with one pointer between them.
    expect(active.map((m: any) => m.message.content)).toEqual([
      'turn 0 about the rollout',
      'turn 1 about the rollout',
      'turn 2 about the rollout',
      expect.stringMatching(/^\[ARCHIVED CONTEXT\] 7 earlier message/),
      'turn 10 about the rollout',
      'turn 11 about the rollout',
    ]);
  });

  it('serves the prepared context: sanitised, with cache markers only for Claude on Anthropic/OpenRouter', async () => {
    const { key } = await gw.tenant();
    const conv = (
      await call('POST', '/v1/conversations', key, {
        model: 'claude-sonnet-4',
        provider: 'anthropic',
        contextLength: 200_000,
      })
    ).json.conversationId;
    const messages = keyed([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
      { role: 'assistant', content: 'd' },
      { role: 'user', content: 'e' },
    ]);
    await call('POST', `/v1/conversations/${conv}/messages`, key, { messages, wait: true });
    const ctx = await call('GET', `/v1/conversations/${conv}/context`, key);
    expect(ctx.status).toBe(200);
    expect(ctx.json.promptCaching).toMatchObject({
      enabled: true,
      line: '💾 Prompt caching: ENABLED (Claude via Anthropic, 5m TTL)',
    });
    const marked = ctx.json.messages
      .map((m: any, i: number) => (JSON.stringify(m).includes('cache_control') ? i : -1))
      .filter((i: number) => i >= 0);
    expect(marked).toEqual([0, 3, 4, 5]);
    const plain = await call('GET', `/v1/conversations/${conv}/context?model=gpt-5.5&provider=openai`, key);
    expect(JSON.stringify(plain.json.messages)).not.toContain('cache_control');
    expect(plain.json.promptCaching.line).toBe('💾 Prompt caching: DISABLED');
  });
});

describe('replay of a compaction that committed nothing', () => {
  it('is 409 saying why, before any summarizer call (issue #9 §3)', async () => {
    const { key } = await gw.tenant({ abort_on_summary_failure: true, protect_last_n: 6 });
    const model = { model: PROVIDER_DOWN_MODEL, contextLength: 200_000 };
    const conv = (await call('POST', '/v1/conversations', key, model)).json.conversationId;
    await call('POST', `/v1/conversations/${conv}/messages`, key, { messages: keyed(agentTranscript(6)), wait: true });
    const aborted = await call('POST', `/v1/conversations/${conv}/compact`, key, {});
    expect(aborted.json.status).toBe('aborted');
    const replay = await call('POST', `/v1/compactions/${aborted.json.compactionId}/replay`, key);
    expect(replay.status).toBe(409);
    expect(replay.json.message).toBe(
      `compaction ${aborted.json.compactionId} ended 'aborted': nothing was committed, so there is no summary to ` +
        `replace. To compact the live transcript now, POST /v1/conversations/${conv}/compact.`,
    );
  });
});

describe('chat backend mode without a provider', () => {
  it('respond: true answers 422 naming the missing provider, before anything is stored', async () => {
    const { key, id } = await gw.tenant();
    const conv = (await call('POST', '/v1/conversations', key, {})).json.conversationId;
    const res = await call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'user', content: 'hello model' }, idempotencyKey: 'u1' }],
      respond: true,
    });
    expect(res.status).toBe(422);
    expect(res.json.message).toContain('no LLM provider is configured');
    expect(await allRows(gw.testDb.db, id)).toEqual([]);
  });
});

describe('bad input gets a clear 4xx and loses nothing', () => {
  let key: string;
  let tenantId: string;
  let conv: string;
  beforeAll(async () => {
    ({ key, id: tenantId } = await gw.tenant());
    conv = (await call('POST', '/v1/conversations', key, {})).json.conversationId;
  });

  it('malformed JSON → 400', async () => {
    const res = await call('POST', `/v1/conversations/${conv}/messages`, key, undefined, '{"messages": [');
    expect(res.status).toBe(400);
    expect(res.json.message).toMatch(/JSON/);
  });

  it('wrong types → 400 naming the field', async () => {
    const missingKey = await call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'user', content: 'x' } }],
    });
    expect(missingKey.status).toBe(400);
    expect(missingKey.json.message).toContain('idempotencyKey');
    const badRole = await call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'robot', content: 'x' }, idempotencyKey: 'k1' }],
    });
    expect(badRole.status).toBe(400);
    expect(badRole.json.message).toContain('role');
    const toolWithoutId = await call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'tool', content: 'x' }, idempotencyKey: 'k2' }],
    });
    expect(toolWithoutId.status).toBe(400);
    expect(toolWithoutId.json.message).toBe('messages[0].message.tool_call_id is required on tool messages');
    const badUsage = await call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'user', content: 'x' }, idempotencyKey: 'k3' }],
      usage: { prompt_tokens: 'many' },
    });
    expect(badUsage.status).toBe(400);
    expect(badUsage.json.message).toContain('prompt_tokens');
  });

  it('oversized body → 413', async () => {
    const big = 'x'.repeat(300 * 1024);
    const res = await call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'user', content: big }, idempotencyKey: 'big' }],
    });
    expect(res.status).toBe(413);
  });

  it('unknown conversation → 404; another tenant’s conversation → 404', async () => {
    const unknown = await call('GET', `/v1/conversations/${randomUUID()}/status`, key);
    expect(unknown.status).toBe(404);
    expect(unknown.json.message).toMatch(/unknown conversation/);
    const other = await gw.tenant();
    const cross = await call('POST', `/v1/conversations/${conv}/messages`, other.key, {
      messages: [{ message: { role: 'user', content: 'intrusion' }, idempotencyKey: 'x' }],
    });
    expect(cross.status).toBe(404);
    expect((await call('GET', `/v1/conversations/${conv}/messages`, other.key)).status).toBe(404);
  });

  it('a bad policy names the key; a too-small model is refused with 422', async () => {
    const res = await call('PUT', `/v1/tenants/${tenantId}/policy`, gw.adminKey, { treshold: 0.4 });
    expect(res.status).toBe(400);
    expect(res.json.message).toBe('Invalid configuration: compression.treshold: unknown key');
    const tiny = await call('POST', '/v1/conversations', key, { model: 'tiny', contextLength: 32_000 });
    expect(tiny.status).toBe(400);
    expect(tiny.json.message).toBe(
      "Model 'tiny' has a context window of 32,000 tokens; at least 64,000 are required. Choose a larger model or set model.context_length.",
    );
    const alias = await call('POST', '/v1/conversations', key, { model: 'gpt-5.5-900k' });
    expect(alias.status).toBe(400);
    expect(alias.json.message).toBe("Model 'gpt-5.5-900k' is not available: 'gpt-5.5' has no -900k variant.");
  });

  it('after all the bad requests nothing was written for the conversation', async () => {
    const rows = await allRows(gw.testDb.db, tenantId);
    expect(rows).toEqual([]);
  });
});

describe('ops', () => {
  it('/healthz, /metrics with compaction counts, /docs', async () => {
    expect((await call('GET', '/healthz', null)).json).toEqual({ ok: true });
    const metrics = await call('GET', '/metrics', null);
    expect(metrics.text).toContain('dctx_compactions{trigger="manual",status="committed"}');
    expect(metrics.text).toContain('dctx_activity_duration_seconds');
    const docs = await call('GET', '/docs/json', null);
    expect(Object.keys(docs.json.paths)).toEqual(
      expect.arrayContaining(['/v1/conversations/{conversationId}/messages', '/v1/search']),
    );
  });
});
