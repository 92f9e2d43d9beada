// The real Codex CLI (`@openai/codex`, pinned: test/support/clients/codex.ts), unmodified, configured with a custom
// model provider whose base URL is the gateway (`wire_api = "responses"`, the key from an env var), against the
// drop-in Responses endpoint with the fake OpenAI server behind it (issue #12). A multi-turn `codex exec` session
// with `resume`: the fake reports a reading over the in-loop threshold, the gateway compacts in the background, and
// the next turn goes to the provider compacted — while Codex, whose own auto-compaction is set out of reach, never
// errs; every turn is stored once and searchable. And with Codex's own compaction in reach: its summary request
// passes through, is recorded, and its shorter history continues the conversation in a new session, the server
// compacting nothing on top of it — also when that history opens with another day's date (resumed the next day). And on a route that issues native checkpoints (SPEC §15.1): the gateway adds
// the field, and Codex keeps the returned compaction item and sends it back.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCodex } from '../../support/clients/codex.js';
import { type CliRun, DAY_AFTER_TZ, DAY_BEFORE_TZ, runCli } from '../../support/clients/runCli.js';
import { reply } from '../../support/fakes/script.js';
import {
  expectStoredOnce,
  onlyConversation,
  openAIDropinForFile,
  sessionsOf,
  untilCompacted,
} from './dropinFixtures.js';

const dropin = openAIDropinForFile();
let codex: string;
let work: string;

beforeAll(() => {
  codex = ensureCodex();
  work = mkdtempSync(join(tmpdir(), 'dctx-codex-'));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/**
 * One `codex exec` (or `codex exec resume --last`) run to its end; its exit code, output and log. `tz`: the time
 * zone Codex takes its `<current_date>` in (the machine's unless given).
 */
function runCodex(home: string, key: string, args: string[], tz?: string): Promise<CliRun> {
  return runCli(codex, ['exec', ...args], {
    cwd: join(work, 'project'),
    env: { ...process.env, CODEX_HOME: home, DCTX_KEY: key, RUST_LOG: 'warn', ...(tz ? { TZ: tz } : {}) },
  });
}

/** The `<current_date>` of the environment block a Codex request opens with. */
const codexDate = (body: { input: unknown }) => /<current_date>([^<]+)</.exec(JSON.stringify(body.input))?.[1];

/** CODEX_HOME with the gateway as custom model provider; `autoCompactLimit`: Codex's own compaction threshold. */
function codexHome(autoCompactLimit: number, model = 'gpt-test'): string {
  const home = join(work, `home-${randomUUID().slice(0, 8)}`);
  mkdirSync(home, { recursive: true });
  mkdirSync(join(work, 'project'), { recursive: true });
  writeFileSync(
    join(home, 'config.toml'),
    [
      `model = "${model}"`,
      'model_provider = "dctx"',
      `model_auto_compact_token_limit = ${autoCompactLimit}`,
      '',
      '[model_providers.dctx]',
      'name = "durable-context"',
      `base_url = "${dropin.gw.url}/v1"`,
      'env_key = "DCTX_KEY"',
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
  return home;
}

describe('the Codex CLI through the drop-in Responses endpoint', () => {
  it('runs a resumed multi-turn session; the gateway compacts in the background; every turn is stored', async () => {
    const { id: tenantId, key } = await dropin.gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    // Codex's own compaction out of reach: this test is about the gateway's.
    const home = codexHome(100_000_000);
    const turns = ['Turn one: list the garden beds.', 'Turn two: which bed gets shade?', 'Turn three: and water?'];
    // The second answer reports a reading over the in-loop threshold (75 % of the 256K window).
    dropin.openai.enqueue(
      reply('Beds: north, south.', { usage: { input_tokens: 9_000, output_tokens: 20 } }),
      reply('The north bed gets shade.', { usage: { input_tokens: 200_000, output_tokens: 20 } }),
      reply('Water the south bed daily.', { usage: { input_tokens: 12_000, output_tokens: 20 } }),
    );
    const first = await runCodex(home, key, ['--skip-git-repo-check', turns[0] as string]);
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain('Beds: north, south.');
    const second = await runCodex(home, key, ['resume', '--last', '--skip-git-repo-check', turns[1] as string]);
    expect(second.code, second.err).toBe(0);
    expect(second.out).toContain('The north bed gets shade.');

    // Codex sent no conversation id: the gateway derived one from the opening of its history, the same each time.
    const conversationId = await onlyConversation(dropin.gw, tenantId);
    await untilCompacted(dropin.gw, key, conversationId);

    const third = await runCodex(home, key, ['resume', '--last', '--skip-git-repo-check', turns[2] as string]);
    expect(third.code, third.err).toBe(0);
    expect(third.out).toContain('Water the south bed daily.');
    const requests = dropin.openai.responsesRequests().slice(-3);
    // Never compacted: Codex's own requests (streamed, store: false); after the compaction: the summary in place of
    // the first turn.
    expect(requests[0]?.body).toMatchObject({ model: 'gpt-test', stream: true, store: false });
    expect(JSON.stringify(requests[1]?.body.input)).toContain(turns[0]);
    const compacted = JSON.stringify(requests[2]?.body.input);
    expect(compacted).toContain('Fix the failing tests of the project.');
    expect(compacted).not.toContain(turns[0]);
    expect(compacted).toContain(turns[2]);

    const status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
    expect(status.json.compressionCount).toBe(1);
    const replies = ['Beds: north, south.', 'The north bed gets shade.', 'Water the south bed daily.'];
    await expectStoredOnce(dropin.gw, key, conversationId, [...turns, ...replies], { search: 'garden beds' });
  });

  it('carries a native checkpoint (SPEC §15.1): the field on its request, the compaction item echoed by Codex', async () => {
    const { id: tenantId, key } = await dropin.gw.tenant({ codex_responses_native: true });
    // gpt-5.6 is served by `openai-codex` at the fake (a route that issues checkpoints); Codex's own compaction is
    // out of reach.
    const home = codexHome(100_000_000, 'gpt-5.6');
    dropin.openai.enqueue(
      reply('Rows planned.', {
        compaction: 'gAAAA-from-codex-route',
        usage: { input_tokens: 9_000, output_tokens: 20 },
      }),
      reply('Row B is sunniest.', { usage: { input_tokens: 2_000, output_tokens: 20 } }),
    );
    const first = await runCodex(home, key, ['--skip-git-repo-check', 'Plan the orchard rows.']);
    expect(first.code, first.err).toBe(0);
    const second = await runCodex(home, key, ['resume', '--last', '--skip-git-repo-check', 'Which row is sunniest?']);
    expect(second.code, second.err).toBe(0);
    expect(second.out).toContain('Row B is sunniest.');
    const [a, b] = dropin.openai
      .responsesRequests()
      .slice(-2)
      .map((r) => r.body);
    expect(a.context_management).toEqual([{ type: 'compaction', compact_threshold: 196_000 }]);
    // The real client kept the opaque item and sent it back; the gateway passed it on to the route that issued it.
    const echoed = (b.input as Array<Record<string, unknown>>).filter((item) => item.type === 'compaction');
    expect(echoed).toEqual([expect.objectContaining({ encrypted_content: 'gAAAA-from-codex-route' })]);
    // The workflow records the checkpoint when it hears of the reply (asynchronously).
    const triggers = async () =>
      (
        await dropin.gw.testDb.db
          .selectFrom('compactions')
          .select('trigger')
          .where('tenant_id', '=', tenantId)
          .execute()
      ).map((r) => r.trigger);
    for (let i = 0; i < 100 && (await triggers()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await triggers()).toEqual(['responses_native']);
  });

  it('passes Codex’s own compaction through, records it and continues in a new session, never compacting on top', async () => {
    const { id: tenantId, key } = await dropin.gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    const home = codexHome(5_000);
    const turns = [
      'Turn one: plan the orchard rows.',
      'Turn two: which row is sunniest?',
      'Turn three: when to prune?',
    ];
    const summary = 'HANDOFF: the orchard has rows A and B; row B faces south.';
    // Codex compacts before its second turn (9,000 tokens over its limit of 5,000). The summary request's reading is
    // over the gateway's own in-loop threshold (75 % of 256K): counted, it would make the gateway compact too.
    dropin.openai.enqueue(
      reply('Rows: A, B.', { usage: { input_tokens: 9_000, output_tokens: 20 } }),
      reply(summary, { usage: { input_tokens: 200_000, output_tokens: 30 } }),
      reply('Row B is sunniest.', { usage: { input_tokens: 2_000, output_tokens: 20 } }),
      reply('Prune in late winter.', { usage: { input_tokens: 2_500, output_tokens: 20 } }),
    );
    const before = dropin.openai.responsesRequests().length;
    // The session starts one day and is resumed the next: Codex's compacted history opens with the new date.
    const first = await runCodex(home, key, ['--skip-git-repo-check', turns[0] as string], DAY_BEFORE_TZ);
    expect(first.code, first.err).toBe(0);
    const resume = (turn: string) =>
      runCodex(home, key, ['resume', '--last', '--skip-git-repo-check', turn], DAY_AFTER_TZ);
    const second = await resume(turns[1] as string);
    expect(second.code, second.err).toBe(0);
    expect(second.out).toContain('Row B is sunniest.');
    const third = await resume(turns[2] as string);
    expect(third.code, third.err).toBe(0);
    expect(third.out).toContain('Prune in late winter.');

    const requests = dropin.openai.responsesRequests().slice(before);
    expect(requests).toHaveLength(4);
    expect(codexDate(requests[0]?.body as { input: unknown })).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(codexDate(requests[2]?.body as { input: unknown })).not.toBe(
      codexDate(requests[0]?.body as { input: unknown }),
    );
    // The compaction request went to the provider as Codex sent it: no tools, its own prompt last, the first turn in.
    const compaction = requests[1]?.body as { input: unknown[]; tools?: unknown[] };
    expect(compaction.tools ?? []).toHaveLength(0);
    expect(JSON.stringify(compaction.input.at(-1))).toContain('CONTEXT CHECKPOINT COMPACTION');
    expect(JSON.stringify(compaction.input)).toContain('Rows: A, B.');
    // After it, Codex's own shorter history (its summary in it) went out unchanged: not our compacted transcript.
    const after = JSON.stringify(requests[2]?.body.input);
    expect(after).toContain(summary);
    expect(after).not.toContain('Rows: A, B.');
    expect(after).not.toContain('[CONTEXT COMPACTION');

    // One conversation (no branch, though the day changed), rotated: the old session ended, the new one its child.
    const conversations = await dropin.gw.testDb.db
      .selectFrom('conversations')
      .select(['id', 'current_session_id'])
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(conversations).toHaveLength(1);
    const conversation = conversations[0] as { id: string; current_session_id: string };
    const sessions = await sessionsOf(dropin.gw, tenantId);
    expect(sessions).toHaveLength(2);
    expect(sessions[1]).toMatchObject({
      id: conversation.current_session_id,
      parent_session_id: sessions[0]?.id,
      compression_count: 1,
    });
    expect(sessions[0]?.end_reason).toBe('compression');
    // The client's compaction is recorded; the server ran none of its own, and stays out of the client's way.
    const compactions = await dropin.gw.testDb.db
      .selectFrom('compactions')
      .select(['trigger', 'status', 'session_id', 'new_session_id', 'summary'])
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(compactions).toEqual([
      {
        trigger: 'client',
        status: 'committed',
        session_id: sessions[0]?.id,
        new_session_id: sessions[1]?.id,
        summary,
      },
    ]);
    let status = await dropin.gw.call('GET', `/v1/conversations/${conversation.id}/status`, key);
    for (let i = 0; i < 100 && status.json.sessionId !== conversation.current_session_id; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await dropin.gw.call('GET', `/v1/conversations/${conversation.id}/status`, key);
    }
    expect(status.json).toMatchObject({ sessionId: conversation.current_session_id, autoPaused: 'client' });
    expect(status.json.compressionCount).toBe(0);

    // Every turn is stored once in the session that holds it; what Codex sent after its compaction is the new
    // session's transcript, in order.
    const texts = [turns[1], turns[2], summary, 'Row B is sunniest.', 'Prune in late winter.'] as string[];
    const stored = await expectStoredOnce(dropin.gw, key, conversation.id, texts, { search: 'orchard rows' });
    expect(stored.some((m) => JSON.stringify(m.content).includes('Rows: A, B.'))).toBe(false);
    const old = await dropin.gw.call('GET', `/v1/search?q=${encodeURIComponent('Rows: A, B.')}`, key);
    expect(old.json.results.length).toBeGreaterThan(0);
  });
});
