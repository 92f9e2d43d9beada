// The real Claude Code CLI (`@anthropic-ai/claude-code`, pinned: test/support/clients/claudeCode.ts), unmodified, with
// ANTHROPIC_BASE_URL = the gateway and the tenant's key as ANTHROPIC_API_KEY, against the drop-in Anthropic Messages
// endpoint with the fake Anthropic server behind it (issue #12: a client written for Anthropic works by changing a base
// URL). With its default model Claude Code sends system turns inside `messages` (the SDK's SystemMessageParam), which
// the gateway refused before. A continued multi-turn `claude -p` session in which the model asks for a shell command
// that Claude Code really runs; the fake then reports a reading over the in-loop threshold, the gateway compacts in the
// background, and the next turn goes to the provider compacted, its system turns where Claude Code put them; every
// turn is stored once and searchable.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureClaudeCode } from '../../support/clients/claudeCode.js';
import { type CliRun, runCli } from '../../support/clients/runCli.js';
import { reply, toolCallsReply } from '../../support/fakes/script.js';
import {
  anthropicDropinForFile,
  expectStoredOnce,
  onlyConversation,
  scratchDirForFile,
  sessionsOf,
  untilCompacted,
} from './dropinFixtures.js';

/**
 * What the model asks Claude Code to run: a computed marker (it really ran it) and output long enough that summarising
 * it makes the transcript smaller (else the compaction is refused).
 */
const SHELL_COMMAND = "echo dctx-$((6*7)); seq 1 400 | sed 's/^/line /'";
const dropin = anthropicDropinForFile();
const work = scratchDirForFile('dctx-claude-');
let claude: string;

beforeAll(() => {
  claude = ensureClaudeCode();
});

/** A home and a project directory of their own (Claude Code keeps its sessions under the home, per project). */
function claudeHome(): { home: string; project: string } {
  const home = join(work.path, `home-${Math.random().toString(36).slice(2, 10)}`);
  const project = join(home, 'project');
  mkdirSync(project, { recursive: true });
  return { home, project };
}

/** One `claude -p` run (offline: no update check, no telemetry) to its end, Bash allowed; its exit code and output. */
function runClaude(where: { home: string; project: string }, key: string, args: string[]): Promise<CliRun> {
  return runCli(claude, ['--output-format', 'text', '--allowedTools', 'Bash', ...args], {
    cwd: where.project,
    env: {
      PATH: process.env.PATH,
      HOME: where.home,
      ANTHROPIC_BASE_URL: dropin.gw.url,
      ANTHROPIC_API_KEY: key,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    },
  });
}

type WireMessage = { role: string; content: unknown };
const rolesOf = (body: Record<string, any>) => (body.messages as WireMessage[]).map((m) => m.role);

describe('Claude Code through the drop-in Anthropic Messages endpoint', () => {
  it('runs a continued session with system turns and a real tool call; the gateway compacts in the background', async () => {
    const { anthropic, gw } = dropin;
    // Kept at the head: the system prompt, turn one and the system turn Claude Code sends after it.
    const { id: tenantId, key } = await gw.tenant({ protect_first_n: 3, protect_last_n: 2 });
    const where = claudeHome();
    const turns = ['Turn one: what does the shell answer?', 'Turn two: and the weather?', 'Turn three: thanks.'];
    const before = anthropic.messageRequests().length;
    // The model asks for a command; Claude Code runs it and sends its output. The second turn's answer reports a
    // reading over the gateway's in-loop threshold (75 % of the 256K window).
    anthropic.enqueue(
      {
        ...toolCallsReply(
          [{ id: 'toolu_cc_1', name: 'Bash', input: { command: SHELL_COMMAND, description: 'Ask the shell' } }],
          'Checking.',
        ),
        usage: { input_tokens: 9_000, output_tokens: 20 },
      },
      reply('The shell answers dctx-42.', { usage: { input_tokens: 9_500, output_tokens: 20 } }),
      reply('Sunny all week.', { usage: { input_tokens: 200_000, output_tokens: 20 } }),
      reply('You are welcome.', { usage: { input_tokens: 12_500, output_tokens: 20 } }),
    );
    const first = await runClaude(where, key, ['-p', turns[0] as string]);
    expect(first.code, first.err || first.out).toBe(0);
    expect(first.out).toContain('The shell answers dctx-42.');
    const sent = () => anthropic.messageRequests().slice(before);
    // Claude Code sent system turns inside `messages`, and the provider got them there, as sent.
    expect(rolesOf(sent()[0]?.body ?? {})).toContain('system');
    // Claude Code ran the command for real: its output went back as the tool result.
    const afterTool = JSON.stringify(sent()[1]?.body.messages);
    expect(afterTool).toContain('toolu_cc_1');
    expect(afterTool).toContain('dctx-42');
    expect(afterTool).toContain('line 400');

    const second = await runClaude(where, key, ['-c', '-p', turns[1] as string]);
    expect(second.code, second.err || second.out).toBe(0);
    expect(second.out).toContain('Sunny all week.');
    // Claude Code sent no conversation id: the gateway derived one from the opening of its history, the same each time.
    const conversationId = await onlyConversation(gw, tenantId);
    await untilCompacted(gw, key, conversationId);
    const third = await runClaude(where, key, ['-c', '-p', turns[2] as string]);
    expect(third.code, third.err || third.out).toBe(0);
    expect(third.out).toContain('You are welcome.');

    const requests = sent();
    expect(requests).toHaveLength(4);
    expect(requests[0]?.body).toMatchObject({ stream: true });
    expect(JSON.stringify(requests[2]?.body.messages)).toContain('line 400');
    // After the compaction: the summary in place of the tool call and its output, Claude Code's system prompt on top,
    // and the system turn that was kept where Claude Code put it, as it sent it — not moved into `system`.
    const compacted = requests[3]?.body as Record<string, any>;
    const wire = JSON.stringify(compacted.messages);
    expect(wire).toContain('Fix the failing tests of the project.');
    expect(wire).not.toContain('line 400');
    expect(rolesOf(compacted)).toEqual(['user', 'system', 'assistant', 'user', 'assistant', 'user']);
    // The system turn as Claude Code sent it: its text, and its own per-turn `output_config`.
    const turnText = (message: Record<string, any>) =>
      typeof message.content === 'string'
        ? message.content
        : message.content.map((b: { text: string }) => b.text).join('');
    const sentTurn = (requests[2]?.body as Record<string, any>)?.messages[1];
    const { content: _sent, ...sentFields } = sentTurn;
    const { content: _kept, ...keptFields } = compacted.messages[1];
    expect(sentFields).toHaveProperty('output_config');
    expect(keptFields).toEqual(sentFields);
    expect(turnText(compacted.messages[1])).toBe(turnText(sentTurn));
    expect(wire).toContain(turns[1]);
    expect(wire).toContain(turns[2]);
    // Claude Code's system prompt, text for text, with SPEC §8.6.1's note after it.
    const texts = (system: unknown) => (system as Array<{ text: string }>).map((block) => block.text);
    const clientSystem = texts(requests[2]?.body.system);
    expect(texts(compacted.system).slice(0, clientSystem.length)).toEqual(clientSystem);
    expect(texts(compacted.system).at(-1)).toContain('compacted into a handoff summary');

    const replies = ['The shell answers dctx-42.', 'Sunny all week.', 'You are welcome.', 'line 400'];
    const stored = await expectStoredOnce(gw, key, conversationId, [...turns, ...replies], {
      search: 'dctx-42',
      toolRow: 'dctx-42',
    });
    // The system turn is stored where it stood: right after turn one.
    const turnOne = stored.findIndex((m) => JSON.stringify(m.content).includes(turns[0] as string));
    expect(stored[turnOne + 1]).toMatchObject({ role: 'system' });
  });

  it('passes its own /compact through, records it and continues in a new session of the same conversation', async () => {
    const { anthropic, gw } = dropin;
    const { id: tenantId, key } = await gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    const where = claudeHome();
    const turns = [
      'Turn one: plan the orchard rows.',
      'Turn two: which row is sunniest?',
      'Turn three: when to prune?',
    ] as const;
    // What Claude Code carries on: the <summary> block of the reply, in a first message of its own words.
    const summary = '1. Primary Request and Intent: plan the orchard; it has rows A and B, and row B faces south.';
    const before = anthropic.messageRequests().length;
    // The summary request's reading is over the gateway's in-loop threshold (75 % of 256K): counted, it would make the
    // gateway compact too.
    anthropic.enqueue(
      reply('Rows: A, B.', { usage: { input_tokens: 9_000, output_tokens: 20 } }),
      reply(`<analysis>\nThe user plans an orchard.\n</analysis>\n\n<summary>\n${summary}\n</summary>`, {
        usage: { input_tokens: 200_000, output_tokens: 30 },
      }),
      reply('Row B is sunniest.', { usage: { input_tokens: 2_000, output_tokens: 20 } }),
      reply('Prune in late winter.', { usage: { input_tokens: 2_500, output_tokens: 20 } }),
    );
    for (const [args, answer] of [
      [['-p', turns[0]], 'Rows: A, B.'],
      [['-c', '-p', '/compact'], ''],
      [['-c', '-p', turns[1]], 'Row B is sunniest.'],
      [['-c', '-p', turns[2]], 'Prune in late winter.'],
    ] as const) {
      const run = await runClaude(where, key, [...args]);
      expect(run.code, run.err || run.out).toBe(0);
      expect(run.out).toContain(answer);
    }

    const requests = anthropic.messageRequests().slice(before);
    expect(requests).toHaveLength(4);
    // The compaction request went to the provider as Claude Code sent it: its tools offered, its prompt last.
    const compaction = requests[1]?.body as Record<string, any>;
    expect(compaction.tools.length).toBeGreaterThan(0);
    expect(JSON.stringify(compaction.messages.at(-1))).toContain(
      'create a detailed summary of the conversation so far',
    );
    // After it, Claude Code's own shorter history went out unchanged: its summary first, not our compacted transcript.
    const after = JSON.stringify(requests[2]?.body.messages);
    expect(after).toContain(summary);
    expect(after).not.toContain('Rows: A, B.');
    expect(JSON.stringify(requests[2]?.body.system)).not.toContain('compacted into a handoff summary');

    // One conversation, though the history opens otherwise now: rotated, the old session ended, the new its child.
    const conversationId = await onlyConversation(gw, tenantId);
    const sessions = await sessionsOf(gw, tenantId);
    expect(sessions).toHaveLength(2);
    expect(sessions[1]).toMatchObject({ parent_session_id: sessions[0]?.id, compression_count: 1 });
    expect(sessions[0]?.end_reason).toBe('compression');
    const compactions = await gw.testDb.db
      .selectFrom('compactions')
      .select(['trigger', 'status', 'session_id', 'new_session_id'])
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(compactions).toEqual([
      { trigger: 'client', status: 'committed', session_id: sessions[0]?.id, new_session_id: sessions[1]?.id },
    ]);
    // Every turn is stored once; the summary prompt and its answer are not turns of the new session.
    // The old session stays searchable.
    const texts = [turns[1], turns[2], summary, 'Row B is sunniest.', 'Prune in late winter.'];
    const stored = await expectStoredOnce(gw, key, conversationId, texts, { search: 'Rows: A, B.' });
    expect(stored.some((m) => JSON.stringify(m.content).includes('create a detailed summary'))).toBe(false);
  });
});
