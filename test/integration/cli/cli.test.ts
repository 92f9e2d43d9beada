// The `dctx` command line end to end: the real CLI as a subprocess (node --import tsx workers/cli.ts) against a
// gateway on a loopback port, over a real worker, Temporal and PostgreSQL.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Summarizer } from '../../../engine/index.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let gw: GatewayHarness;
let dir: string;
let transcript: string;
let tenantKey: string;
const tenantId = 'cli-acme';
const conversationId = 'cli-import';

/** Runs `dctx <args>` with DCTX_URL set to the test gateway; `env` adds (or, with undefined, removes) variables. */
function dctx(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DCTX_URL: gw.url };
  delete childEnv.DCTX_KEY;
  delete childEnv.DURABLE_CONTEXT_ADMIN_KEY;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'workers/cli.ts', ...args],
      { cwd: ROOT, env: childEnv, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const asAdmin = () => ({ DURABLE_CONTEXT_ADMIN_KEY: gw.adminKey });
const asTenant = () => ({ DCTX_KEY: tenantKey });

async function get(path: string): Promise<any> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${tenantKey}` } });
  expect(res.status).toBe(200);
  return res.json();
}

/** A small coding-agent transcript: system, then rounds of user → tool call → tool output → answer (with usage). */
function sampleTranscript(): string {
  const lines: unknown[] = [
    { role: 'system', content: 'You are a careful coding agent working in the repository ledgerline.' },
  ];
  const topics = ['money rounding', 'tax rates', 'due dates', 'receipt snapshots', 'invoice finalize', 'api handlers'];
  let prompt = 400;
  topics.forEach((topic, r) => {
    const id = `call_${r}`;
    lines.push({
      role: 'user',
      content: r === 2 ? 'The checkout test is flaky on CI, look at the due dates next.' : `Next: ${topic}, please.`,
    });
    lines.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id,
          type: 'function',
          function: { name: 'run_command', arguments: JSON.stringify({ command: `npx vitest run test/${r}` }) },
        },
      ],
    });
    lines.push({
      role: 'tool',
      tool_call_id: id,
      name: 'run_command',
      content: `FAIL test/${r}.test.ts\n${'  at frame (src/x.ts:1:1)\n'.repeat(40)}`,
    });
    prompt += 900;
    lines.push({
      message: { role: 'assistant', content: `Fixed ${topic}; the tests pass.` },
      usage: { prompt_tokens: prompt, completion_tokens: 40 },
    });
  });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

/** A summary provider that is down: compactions use the §9.5 fallback (replayable), and a replay fails too. */
const providerDown: Summarizer = async () => {
  throw new Error('summary provider unavailable (503)');
};

beforeAll(async () => {
  gw = await startGatewayHarness({ summarizer: providerDown });
  dir = await mkdtemp(join(tmpdir(), 'dctx-cli-'));
  transcript = join(dir, 'session.jsonl');
  await writeFile(transcript, sampleTranscript());
});

afterAll(async () => {
  await gw?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('dctx', () => {
  it('tenants create --key issues a key (and needs the admin key)', async () => {
    const missing = await dctx(['tenants', 'create', tenantId]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('missing admin key: pass --admin-key <key> or set DURABLE_CONTEXT_ADMIN_KEY');

    const created = await dctx(
      ['tenants', 'create', tenantId, '--name', 'Acme CLI', '--policy', '{"protect_last_n": 6}', '--key', '--json'],
      asAdmin(),
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const out = JSON.parse(created.stdout);
    expect(out.tenant).toMatchObject({ id: tenantId, name: 'Acme CLI', policy: { protect_last_n: 6 } });
    expect(out.key).toMatchObject({ tenantId });
    expect(out.key.key).toMatch(/^dctx_/);
    tenantKey = out.key.key;

    const again = await dctx(['tenants', 'create', tenantId, '--admin-key', gw.adminKey]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`tenant  ${tenantId} (Acme CLI)`);

    const key = await dctx(['keys', 'create', tenantId, '--label', 'ci'], asAdmin());
    expect(key.code).toBe(0);
    expect(key.stdout.trim()).toMatch(/^dctx_\S+$/);

    // Keys (issue #14 §4): a read key, listed without the key, rotated with an overlap, the old one revoked.
    const read = JSON.parse((await dctx(['keys', 'create', tenantId, '--scope', 'read', '--json'], asAdmin())).stdout);
    expect(read).toMatchObject({ scope: 'read', label: null });
    const rotated = await dctx(['keys', 'rotate', tenantId, read.id, '--overlap', '60', '--json'], asAdmin());
    expect(rotated.code).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ scope: 'read', replaces: read.id });
    const revoked = await dctx(['keys', 'revoke', tenantId, read.id], asAdmin());
    expect(revoked.stdout).toMatch(new RegExp(`^key ${read.id} revoked at \\S+`));
    const listed = await dctx(['keys', 'list', tenantId], asAdmin());
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(4);
    expect(listed.stdout).toMatch(new RegExp(`^${read.id}  read  \\S+  revoked `, 'm'));
    expect(listed.stdout).not.toContain('dctx_');
    const badScope = await dctx(['keys', 'create', tenantId, '--scope', 'write'], asAdmin());
    expect(badScope.code).not.toBe(0);
    expect(badScope.stderr).toContain('--scope');
  });

  it('import replays a transcript; a re-import is a no-op', async () => {
    const first = await dctx(
      ['import', transcript, '--conversation', conversationId, '--context-length', '128000', '--batch', '3'],
      asTenant(),
    );
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('sent 25/25 messages');
    expect(first.stdout).toContain(`Imported 25 messages in 13 batches into conversation '${conversationId}'.`);
    expect(first.stdout).toMatch(/messages\s+25 active/);
    expect(first.stdout).toMatch(/compactions\s+0/);

    const stored = await get(`/v1/conversations/${conversationId}/messages?archived=true`);
    expect(stored.messages).toHaveLength(25);
    expect(stored.messages[2].message).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_0' }] });

    const second = await dctx(
      ['import', transcript, '--conversation', conversationId, '--context-length', '128000'],
      asTenant(),
    );
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/messages\s+25 active/);
    expect((await get(`/v1/conversations/${conversationId}/messages?archived=true`)).messages).toHaveLength(25);
  });

  it('import of a transcript whose tool output is binary (head -c 16 logo.png) finishes; it reads back exactly (issue #9 §1)', async () => {
    const png = '\u0089PNG\r\n\u001a\n\u0000\u0000\u0000\rIHDR\u0000\u0000\u0000\u0010';
    const lines = [
      { role: 'user', content: 'what is in logo.png?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c_png', type: 'function', function: { name: 'shell', arguments: '{"cmd":"head -c 16 logo.png"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c_png', name: 'shell', content: png },
      { role: 'assistant', content: 'a PNG header' },
      { role: 'user', content: 'thanks' },
    ];
    const file = join(dir, 'binary.jsonl');
    await writeFile(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const run = await dctx(['import', file, '--conversation', 'cli-binary', '--context-length', '128000'], asTenant());
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Imported 5 messages');
    const stored = await get('/v1/conversations/cli-binary/messages');
    expect(stored.messages.map((m: { message: unknown }) => m.message)).toEqual(lines);
  });

  it('search finds a message, with the match marked', async () => {
    const found = await dctx(['search', 'flaky'], asTenant());
    expect(found.code).toBe(0);
    expect(found.stdout).toContain('1. [user] session ');
    expect(found.stdout).toContain('The checkout test is >>>flaky<<< on CI');

    const json = await dctx(['search', 'rounding', '--roles', 'assistant', '--json'], asTenant());
    expect(json.code).toBe(0);
    const results = JSON.parse(json.stdout);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ role: 'assistant', source: 'import' });

    const none = await dctx(['search', 'kubernetes'], asTenant());
    expect(none.stdout.trim()).toBe('No matches.');

    const badRole = await dctx(['search', 'x', '--roles', 'robot'], asTenant());
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('--roles must be a comma-separated list of system, user, assistant, tool');
  });

  it('status prints tokens, threshold and compactions', async () => {
    const text = await dctx(['status', conversationId], asTenant());
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^conversation\\s+${conversationId} \\(tenant ${tenantId}\\)`));
    expect(text.stdout).toMatch(/window 128,000 tokens/);
    expect(text.stdout).toMatch(/threshold 96,000 \(75%\)/);
    const json = await dctx(['status', conversationId, '--json'], asTenant());
    expect(JSON.parse(json.stdout)).toMatchObject({ conversationId, activeMessages: 25, compressionCount: 0 });
  });

  it('compactions list shows a fallback compaction; a replay while the provider is still down reports the failure', async () => {
    const empty = await dctx(['compactions', 'list'], asTenant());
    expect(empty.stdout.trim()).toBe('No compactions.');

    const compacted = await dctx(['compact', conversationId, '--focus', 'the tests', '--json'], asTenant());
    expect(compacted.code).toBe(0);
    const compaction = JSON.parse(compacted.stdout) as { compactionId: string; status: string };
    expect(compaction.status).toBe('fallback');

    const listed = await dctx(['compactions', 'list', '--status', 'fallback,failed,aborted'], asTenant());
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+CONVERSATION\s+#\s+TRIGGER\s+STATUS\s+ENGINE/);
    expect(listed.stdout).toContain(compaction.compactionId);
    expect(listed.stdout).toMatch(new RegExp(`${conversationId}\\s+1\\s+manual\\s+fallback\\*\\s+compressor`));
    const json = JSON.parse((await dctx(['compactions', 'list', '--json'], asTenant())).stdout);
    expect(json).toEqual([
      expect.objectContaining({ id: compaction.compactionId, trigger: 'manual', replayable: true }),
    ]);
    const committed = await dctx(['compactions', 'list', '--status', 'committed'], asTenant());
    expect(committed.stdout.trim()).toBe('No compactions.');

    const replay = await dctx(['compactions', 'replay', compaction.compactionId], asTenant());
    expect(replay.stdout).toContain(`Replay of ${compaction.compactionId}: failed`);
    expect(replay.code).toBe(1);

    const status = await dctx(['status', conversationId], asTenant());
    expect(status.stdout).toMatch(/compactions\s+1/);
  });

  it('a bad key or a missing key exits 1 with a clear message', async () => {
    const bad = await dctx(['status', conversationId, '--key', 'dctx_not-a-real-key']);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe('error: invalid API key');
    expect(bad.stdout).toBe('');

    const missing = await dctx(['search', 'flaky']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('missing tenant API key: pass --key <key> or set DCTX_KEY');

    const unknown = await dctx(['status', 'no-such-conversation'], asTenant());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe("error: unknown conversation 'no-such-conversation'");

    const badFile = join(dir, 'bad.jsonl');
    await writeFile(badFile, '{"role": "user", "content": "hi"}\n{"role": "user"}\n');
    const badImport = await dctx(['import', badFile], asTenant());
    expect(badImport.code).toBe(1);
    expect(badImport.stderr.trim()).toBe('error: bad.jsonl:2: message.content is required (use null for none)');

    const unreachable = await dctx(['status', conversationId, '--url', 'http://127.0.0.1:9'], asTenant());
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('cannot reach the gateway at http://127.0.0.1:9');
  });

  it("model switches a conversation's model and prints the status with the cache warning (SPEC §4.6)", async () => {
    const created = await fetch(`${gw.url}/v1/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenantKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme-chat', contextLength: 200_000 }),
    });
    const { conversationId: conv } = (await created.json()) as { conversationId: string };
    const run = await dctx(['model', conv, 'acme-small', '--context-length', '100000'], asTenant());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/model\s+acme-small, window 100,000 tokens/);
    expect(run.stdout).toMatch(/threshold 75,000 \(75%\)/);
    expect(run.stdout).toMatch(/notice\s+Switching model or credentials mid-conversation: the provider's prompt cache/);
    const refused = await dctx(['model', conv, 'gpt-5.5-900k'], asTenant());
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      "error: model: Model 'gpt-5.5-900k' is not available: 'gpt-5.5' has no -900k variant.",
    );
  });

  it('an invalid environment variable exits 1 with one line naming it (infra/config/env.ts)', async () => {
    const run = await dctx(['status', conversationId], { ...asTenant(), DCTX_URL: 'gateway:8080' });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'error: Invalid environment: DCTX_URL: expected an http:// or https:// URL, got "gateway:8080"\n',
    );
    expect(run.stdout).toBe('');
  });
});
