// SPEC §15.1 (issue #13 §1), the pure rules: the gate over every model/route combination the spec names, the
// threshold and its examples, the rejection rule, and replay items kept to the route that issued them.
import { describe, expect, it } from 'vitest';
import { normalizeCompressionConfig } from '../../../engine/config.js';
import {
  contextManagementField,
  isNativeCompactionRejection,
  nativeCheckpointIndex,
  nativeCompactionGate,
  nativeCompactThreshold,
  replayableItems,
  rowsAfterCheckpoint,
} from '../../../engine/nativeCompaction.js';

const ON = normalizeCompressionConfig({ codexResponsesNative: true });
const OFF = normalizeCompressionConfig({});
const OPENAI = { provider: 'openai', baseUrl: 'https://api.openai.com/v1' };
const CODEX = { provider: 'openai-codex', baseUrl: 'https://chatgpt.com/backend-api/codex' };
const ask = (model: string, route: { provider: string; baseUrl: string }, extra: Record<string, unknown> = {}) => ({
  api: 'responses' as const,
  model,
  ...route,
  disabledForSession: false,
  ...extra,
});

describe('nativeCompactionGate', () => {
  it('sends the field for the gpt-5.6 family (after -900k stripping) on api.openai.com or openai-codex only', () => {
    for (const model of [
      'gpt-5.6',
      'gpt-5.6-sol',
      'gpt-5.6-terra',
      'gpt-5.6-luna',
      'gpt-5.6-sol-900k',
      'openai/GPT-5.6',
    ]) {
      for (const route of [OPENAI, CODEX])
        expect(nativeCompactionGate(ON, ask(model, route)), model).toEqual({ send: true });
    }
    for (const model of ['gpt-5.5', 'gpt-5.4-900k', 'gpt-5.6-mini', 'gpt-5', 'claude-sonnet-4-5']) {
      expect(nativeCompactionGate(ON, ask(model, OPENAI)), model).toEqual({
        send: false,
        reason: 'model_not_eligible',
      });
    }
    const others = [
      { provider: 'openai', baseUrl: 'https://my-proxy.example.com/v1' },
      { provider: 'openai', baseUrl: 'http://127.0.0.1:8080/v1' },
      { provider: 'openrouter', baseUrl: 'https://openrouter.ai/api/v1' },
      { provider: 'xai', baseUrl: 'https://api.x.ai/v1' },
      { provider: 'copilot', baseUrl: 'https://api.githubcopilot.com' },
      { provider: 'custom', baseUrl: 'https://api.openai.com/v1' }, // the right host under another provider id
      { provider: 'openai', baseUrl: 'not a url' },
    ];
    for (const route of others) {
      expect(nativeCompactionGate(ON, ask('gpt-5.6', route)), JSON.stringify(route)).toEqual({
        send: false,
        reason: 'route_not_eligible',
      });
    }
  });

  it('is off without the opt-in, for another API, and once disabled for the session — in the spec’s order', () => {
    expect(nativeCompactionGate(OFF, ask('gpt-5.6', OPENAI))).toEqual({ send: false, reason: 'not_opted_in' });
    expect(nativeCompactionGate(ON, ask('gpt-5.6', OPENAI, { api: 'chat_completions' }))).toEqual({
      send: false,
      reason: 'not_responses',
    });
    expect(nativeCompactionGate(ON, ask('gpt-5.6', OPENAI, { disabledForSession: true }))).toEqual({
      send: false,
      reason: 'disabled',
    });
    expect(nativeCompactionGate(OFF, ask('gpt-5.5', { provider: 'xai', baseUrl: 'https://api.x.ai' }))).toMatchObject({
      reason: 'not_opted_in',
    });
  });
});

describe('nativeCompactThreshold', () => {
  it('is max(1, min(codex_responses_compact_threshold, thresholdTokens − 8,000)): the spec’s examples', () => {
    expect(nativeCompactThreshold(ON, 204_000)).toBe(196_000); // gpt-5.6 on Codex
    expect(nativeCompactThreshold(ON, 450_000)).toBe(200_000); // gpt-5.6-sol-900k
    expect(
      nativeCompactThreshold(
        normalizeCompressionConfig({ codexResponsesNative: true, codexResponsesCompactThreshold: 50_000 }),
        450_000,
      ),
    ).toBe(50_000);
    expect(nativeCompactThreshold(ON, 8_000)).toBe(1);
    expect(contextManagementField(196_000)).toEqual([{ type: 'compaction', compact_threshold: 196_000 }]);
  });
});

describe('isNativeCompactionRejection', () => {
  it('a 4xx naming context_management (param, or unsupported_parameter about it); nothing else', () => {
    expect(isNativeCompactionRejection({ status: 400, param: 'context_management' })).toBe(true);
    expect(isNativeCompactionRejection({ status: 400, param: 'context_management[0].compact_threshold' })).toBe(true);
    expect(
      isNativeCompactionRejection({
        status: 400,
        code: 'unsupported_parameter',
        message: "Unsupported parameter: 'context_management'",
      }),
    ).toBe(true);
    expect(
      isNativeCompactionRejection({
        status: 422,
        code: 'unsupported_parameter',
        message: 'Compaction is not supported here',
      }),
    ).toBe(true);
    expect(
      isNativeCompactionRejection({ status: 400, code: 'unsupported_parameter', message: "Unsupported: 'top_k'" }),
    ).toBe(false);
    expect(isNativeCompactionRejection({ status: 400, param: 'input' })).toBe(false);
    expect(isNativeCompactionRejection({ status: 500, param: 'context_management' })).toBe(false);
    expect(isNativeCompactionRejection({ status: 429, message: 'rate limited' })).toBe(false);
  });
});

describe('replayableItems', () => {
  it('keeps only the items the route itself issued (provider, endpoint, account)', () => {
    const origin = { provider: 'openai', baseUrl: 'https://api.openai.com/v1', account: 'acct-1' };
    const items = [
      { id: 'a', origin },
      { id: 'b', origin: { ...origin, baseUrl: 'https://api.openai.com/v1/' } },
      { id: 'c', origin: { ...origin, account: 'acct-2' } },
      { id: 'd', origin: { ...origin, provider: 'openai-codex' } },
      { id: 'e', origin: { ...origin, baseUrl: 'https://eu.api.openai.com/v1' } },
    ];
    expect(replayableItems(items, origin).map((i) => i.id)).toEqual(['a', 'b']);
  });
});

describe('the rows sent after a checkpoint', () => {
  const origin = { provider: 'openai-codex', baseUrl: 'https://chatgpt.com/backend-api/codex', account: 'a1' };
  const other = { ...origin, account: 'a2' };
  const checkpoint = (from = origin) => ({ origin: from, items: [{ type: 'compaction', encrypted_content: 'x' }] });

  it('starts at the newest checkpoint its own route issued; another route’s is skipped', () => {
    expect(nativeCheckpointIndex([null, checkpoint(), null, checkpoint(other), null], origin)).toBe(1);
    expect(nativeCheckpointIndex([null, checkpoint(other)], origin)).toBeNull();
    expect(nativeCheckpointIndex([null, { origin, items: [] }], origin)).toBeNull();
  });

  it('sends the system rows and every row after the last one the request carried, late messages included', () => {
    // 0 system, 1 user (sent), 2 user stored while the model answered, 3 the reply with the checkpoint, 4 user.
    const rows = [
      { position: 0, role: 'system' },
      { position: 1, role: 'user' },
      { position: 2, role: 'user' },
      { position: 3, role: 'assistant' },
      { position: 4, role: 'user' },
    ];
    expect(rowsAfterCheckpoint(rows, 1).map((r) => r.position)).toEqual([0, 2, 3, 4]);
    expect(rowsAfterCheckpoint(rows, null)).toEqual(rows);
  });
});
