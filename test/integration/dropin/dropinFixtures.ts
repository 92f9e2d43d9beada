// Shared by the drop-in tests (issue #12): a gateway with the fake OpenAI server behind it and the official SDK
// pointed at it, one with the fake Anthropic server behind it, and what the gateway stores of a conversation, as a
// client reads it back.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { fakeOpenAIProvider } from '../../support/fakes/openaiProvider.js';
import { fixedSummarizer } from '../../support/harness/fixedSummarizer.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

/** Claude over OpenRouter's OpenAI-compatible API (the fake OpenAI server stands in for it). */
export const ROUTED_CLAUDE = 'anthropic/claude-sonnet-5';

export interface OpenAIDropin {
  openai: OpenAIFake;
  gw: GatewayHarness;
  /** The official SDK as a user configures it: base URL = the gateway, key = the tenant's key. */
  sdk(key: string, headers?: Record<string, string>): OpenAI;
  close(): Promise<void>;
}

/**
 * The gateway (summaries by the fixed summariser) with `gpt-test` served by the fake OpenAI server, an `openrouter`
 * provider (a caching route, SPEC §12.1) at the same fake serving `anthropic/claude-sonnet-5`, and `openai-codex`
 * there serving `gpt-5.6`.
 */
export async function startOpenAIDropin(): Promise<OpenAIDropin> {
  const openai = await startOpenAIFake();
  const openrouter = `  openrouter: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: ["${ROUTED_CLAUDE}"] }`;
  // The Codex route (SPEC §15.1 gate 4: native compaction is sent there) at the same fake, serving gpt-5.6.
  const codex = `  openai-codex: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-5.6] }`;
  const { summarizerFor: _unused, ...llm } = fakeOpenAIProvider(openai, [openrouter, codex]).llm;
  const gw = await startGatewayHarness({ summarizer: fixedSummarizer, stack: { activityDeps: llm } });
  return {
    openai,
    gw,
    sdk: (key, headers = {}) =>
      new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: headers }),
    close: async () => {
      await gw.close();
      await openai.close();
    },
  };
}

/** One drop-in gateway for the test file: started before its tests, closed after them. */
export function openAIDropinForFile(): OpenAIDropin {
  const dropin = {} as OpenAIDropin;
  beforeAll(async () => {
    Object.assign(dropin, await startOpenAIDropin());
  });
  afterAll(async () => {
    await dropin.close?.();
  });
  return dropin;
}

/** The Claude model the Anthropic drop-in tests ask for. */
export const DROPIN_CLAUDE = 'claude-sonnet-4-5';

/** The gateway (summaries by the fixed summariser) with the fake Anthropic server as its `anthropic` provider. */
export async function startAnthropicDropin(): Promise<{ anthropic: AnthropicFake; gw: GatewayHarness }> {
  const anthropic = await startAnthropicFake();
  const config = parseConfigText(
    [
      `model: { default: ${DROPIN_CLAUDE}, provider: anthropic }`,
      'providers:',
      `  anthropic: { base_url: "${anthropic.origin}", api_key_env: FAKE_ANTHROPIC_KEY }`,
    ].join('\n'),
  );
  const { summarizerFor: _unused, ...llm } = llmDepsFromConfig(
    config,
    { FAKE_ANTHROPIC_KEY: 'sk-anthropic' },
    () => undefined,
  );
  const gw = await startGatewayHarness({ summarizer: fixedSummarizer, stack: { activityDeps: llm } });
  return { anthropic, gw };
}

/** One Anthropic drop-in gateway for the test file (startAnthropicDropin): started before its tests, closed after. */
export function anthropicDropinForFile(): { anthropic: AnthropicFake; gw: GatewayHarness } {
  const dropin = {} as { anthropic: AnthropicFake; gw: GatewayHarness };
  beforeAll(async () => {
    Object.assign(dropin, await startAnthropicDropin());
  });
  afterAll(async () => {
    await dropin.gw?.close();
    await dropin.anthropic?.close();
  });
  return dropin;
}

/** A scratch directory for the test file's client homes (`prefix`…): made before its tests, removed after. */
export function scratchDirForFile(prefix: string): { path: string } {
  const dir = { path: '' };
  beforeAll(() => {
    dir.path = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => {
    if (dir.path) rmSync(dir.path, { recursive: true, force: true });
  });
  return dir;
}

/** The tenant's one conversation: a client that sends no id gets one derived from its history, the same each time. */
export async function onlyConversation(gw: GatewayHarness, tenantId: string): Promise<string> {
  const conversations = await gw.testDb.db
    .selectFrom('conversations')
    .select(['id'])
    .where('tenant_id', '=', tenantId)
    .execute();
  expect(conversations).toHaveLength(1);
  return conversations[0]?.id as string;
}

/** The tenant's sessions, oldest first (a client's own compaction ends one and starts its child). */
export function sessionsOf(gw: GatewayHarness, tenantId: string) {
  return gw.testDb.db
    .selectFrom('sessions')
    .select(['id', 'parent_session_id', 'compression_count', 'end_reason'])
    .where('tenant_id', '=', tenantId)
    .orderBy('started_at')
    .execute();
}

/** Waits (at most 10 s) until the conversation's first compaction has settled. */
export async function untilCompacted(gw: GatewayHarness, key: string, conversationId: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const status = await gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
    if (status.json.compressionCount === 1 && !status.json.compacting) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Every stored message of the conversation (active and archived), as GET …/messages?archived=true lists them. */
export async function storedMessages(
  gw: GatewayHarness,
  key: string,
  conversationId: string,
): Promise<Array<Record<string, any>>> {
  const res = await gw.call('GET', `/v1/conversations/${conversationId}/messages?archived=true`, key);
  expect(res.status, res.text).toBe(200);
  return res.json.messages.map((m: { message: Record<string, any> }) => m.message);
}

/**
 * Each of `texts` is in exactly one stored message of the conversation (stored once, never twice), `toolRow` (the
 * shell's output) in one tool row, and a search for `search` finds something. The stored messages.
 */
export async function expectStoredOnce(
  gw: GatewayHarness,
  key: string,
  conversationId: string,
  texts: readonly string[],
  check: { search: string; toolRow?: string },
): Promise<Array<Record<string, any>>> {
  const stored = await storedMessages(gw, key, conversationId);
  for (const text of texts) {
    expect(
      stored.filter((m) => JSON.stringify(m.content).includes(text)),
      text,
    ).toHaveLength(1);
  }
  const { toolRow } = check;
  if (toolRow !== undefined) {
    expect(stored.filter((m) => m.role === 'tool' && JSON.stringify(m.content).includes(toolRow))).toHaveLength(1);
  }
  const found = await gw.call('GET', `/v1/search?q=${encodeURIComponent(check.search)}`, key);
  expect(found.json.results.length).toBeGreaterThan(0);
  return stored;
}

/** A new conversation's opening: a system prompt unique to the test (its own derived conversation) and a question. */
export const capitalQuestion = (): OpenAI.Chat.ChatCompletionMessageParam[] => [
  { role: 'system', content: `You are terse. ${randomUUID()}` },
  { role: 'user', content: 'What is the capital of France?' },
];
