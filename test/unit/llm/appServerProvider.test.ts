// A `codex_app_server` provider (issue #13 §2, SPEC §15.2): its config.yaml keys and defaults, the `-c` overrides
// the app-server is started with, what a turn sends the thread, and how the app-server's usage is read.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appServerInput, chatUsageOf } from '../../../activities/codexAppServer.js';
import type { ChatMessage } from '../../../engine/types.js';
import { launchOverrides } from '../../../infra/codex/pool.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import type { StoredMessage } from '../../../infra/db/messages.js';
import { parseProvidersConfig } from '../../../infra/llm/providers.js';

function providersOf(yaml: string) {
  return parseProvidersConfig(parseConfigText(yaml).raw);
}

describe('providers.<id>.api: codex_app_server', () => {
  it('needs no base_url and defaults to `codex` on PATH, ~/.codex and a read-only sandbox', () => {
    const cfg = providersOf('providers:\n  codex: { api: codex_app_server }\n');
    const codex = cfg.providers.get('codex');
    expect(codex?.api).toBe('codex_app_server');
    expect(codex?.appServer).toEqual({
      command: 'codex',
      codexHome: join(homedir(), '.codex'),
      sandbox: 'read-only',
      config: {},
      upstream: null,
    });
    expect(cfg.main.provider).toBe('codex');
  });

  it('a base_url becomes the upstream Codex calls, with the key variable and headers', () => {
    const yaml = [
      'providers:',
      '  codex:',
      '    api: codex_app_server',
      '    base_url: https://gateway.example/v1/',
      '    api_key_env: UPSTREAM_KEY',
      '    headers: { X-Team: core }',
      '    command: /opt/codex/bin/codex',
      '    codex_home: /var/lib/codex',
      '    sandbox: workspace-write',
      '    config: { model_auto_compact_token_limit: 180000, "features.web_search": true }',
    ].join('\n');
    const settings = providersOf(yaml).providers.get('codex')?.appServer;
    expect(settings).toEqual({
      command: '/opt/codex/bin/codex',
      codexHome: '/var/lib/codex',
      sandbox: 'workspace-write',
      config: { model_auto_compact_token_limit: 180_000, 'features.web_search': true },
      upstream: { baseUrl: 'https://gateway.example/v1', apiKeyEnv: 'UPSTREAM_KEY', headers: { 'X-Team': 'core' } },
    });
    expect(launchOverrides(settings!)).toEqual([
      'approval_policy="never"',
      'sandbox_mode="workspace-write"',
      'check_for_update_on_startup=false',
      'features.plugins=false',
      'model_provider="durable_context_upstream"',
      'model_providers.durable_context_upstream.name="durable-context upstream"',
      'model_providers.durable_context_upstream.base_url="https://gateway.example/v1"',
      'model_providers.durable_context_upstream.wire_api="responses"',
      'model_providers.durable_context_upstream.env_key="UPSTREAM_KEY"',
      'model_providers.durable_context_upstream.http_headers."X-Team"="core"',
      'model_auto_compact_token_limit=180000',
      'features.web_search=true',
    ]);
  });

  it('the app-server keys belong to app-server providers only; values are checked', () => {
    expect(() => providersOf('providers:\n  openai: { codex_home: /tmp/x }\n')).toThrow(
      'Invalid configuration: providers.openai.codex_home: unknown key',
    );
    expect(() => providersOf('providers:\n  codex: { api: codex_app_server, sandbox: none }\n')).toThrow(
      /providers\.codex\.sandbox: expected read-only, workspace-write, danger-full-access, got "none"/,
    );
    expect(() =>
      providersOf('providers:\n  a: { kind: anthropic, api: codex_app_server, base_url: http://x }\n'),
    ).toThrow(/providers\.a\.api: expected chat_completions/);
  });
});

function row(id: number, message: ChatMessage): StoredMessage {
  return {
    id,
    sessionId: 's',
    position: id,
    active: true,
    compacted: false,
    compactionId: null,
    summaryBody: null,
    idempotencyKey: null,
    tokenEstimate: 1,
    timestamp: new Date(0),
    pinned: false,
    message,
  } as StoredMessage;
}

describe('what a turn sends the thread', () => {
  const rows = [
    row(1, { role: 'system', content: 'Be brief.' }),
    row(2, { role: 'user', content: 'First question' }),
    row(3, { role: 'assistant', content: 'First answer' }),
    row(4, { role: 'user', content: 'Second question' }),
    row(5, { role: 'user', content: [{ type: 'text', text: 'with a part' }] }),
  ];

  it('an existing thread gets only what came after the last reply', () => {
    expect(appServerInput(rows, false)).toBe('Second question\n\nwith a part');
  });

  it('a new thread is given the transcript before it once (no system rows)', () => {
    expect(appServerInput(rows, true)).toBe(
      'The conversation so far:\n\nuser: First question\n\nassistant: First answer\n\n---\n\nSecond question\n\nwith a part',
    );
    expect(appServerInput(rows.slice(0, 2), true)).toBe('First question');
  });
});

describe("the app-server's usage", () => {
  it('maps to a turn reading with its cache economics', () => {
    expect(
      chatUsageOf({
        totalTokens: 1_300,
        inputTokens: 1_200,
        cachedInputTokens: 800,
        cacheWriteInputTokens: 100,
        outputTokens: 100,
        reasoningOutputTokens: 20,
      }),
    ).toEqual({
      prompt_tokens: 1_200,
      completion_tokens: 100,
      total_tokens: 1_300,
      cache_read_tokens: 800,
      cache_write_tokens: 100,
      uncached_input_tokens: 300,
    });
    expect(chatUsageOf(null).prompt_tokens).toBe(0);
  });
});
