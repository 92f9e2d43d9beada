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
    // Kept at the head: the system prompt, turn one and the system turn Claude Code sends after it.
    const { anthropic, gw } = dropin;
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
    const stored = await expectStoredOnce(gw, key, conversationId, [...turns, ...replies], 'dctx-42');
    // The system turn is stored where it stood: right after turn one.
    const turnOne = stored.findIndex((m) => JSON.stringify(m.content).includes(turns[0] as string));
    expect(stored[turnOne + 1]).toMatchObject({ role: 'system' });
  });
});
