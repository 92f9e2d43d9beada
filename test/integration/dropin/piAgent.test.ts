// The real pi coding agent (`@mariozechner/pi-coding-agent`, pinned: test/support/clients/pi.ts), unmodified, with a
// custom provider of `api: "anthropic-messages"` whose base URL is the gateway (the key from an env var), against the
// drop-in Anthropic Messages endpoint with the fake Anthropic server behind it (issue #12: another real client of the
// Anthropic dialect that runs offline). A continued multi-turn `pi -p` session in which the model asks for a shell
// command that pi really runs; the fake then reports a reading over the in-loop threshold, the gateway compacts in
// the background, and the next turn goes to the provider compacted — while pi, its own compaction out of reach,
// never errs; every turn is stored once and searchable.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensurePi } from '../../support/clients/pi.js';
import { type CliRun, DAY_AFTER_TZ, DAY_BEFORE_TZ, runCli } from '../../support/clients/runCli.js';
import { reply, toolCallsReply } from '../../support/fakes/script.js';
import {
  anthropicDropinForFile,
  DROPIN_CLAUDE,
  expectStoredOnce,
  onlyConversation,
  scratchDirForFile,
  untilCompacted,
} from './dropinFixtures.js';

const MODEL = DROPIN_CLAUDE;
/** What the model asks pi to run: a computed marker (pi really ran it) and enough output to be worth compacting. */
const SHELL_COMMAND = "echo dctx-$((6*7)); seq 1 3 | sed 's/^/line /'";
/** A first turn long enough that summarising it makes the transcript smaller (else the compaction is refused). */
const BRIEFING = Array.from({ length: 120 }, (_, i) => `Note ${i}: the staging cluster rotates its logs nightly.`).join(
  ' ',
);
const dropin = anthropicDropinForFile();
const work = scratchDirForFile('dctx-pi-');
let pi: string;

beforeAll(() => {
  pi = ensurePi();
});

/** pi's agent directory with the gateway as its provider `dctx`; `contextWindow`: what pi compacts against. */
function piHome(contextWindow: number): { agentDir: string; project: string } {
  const home = join(work.path, `home-${Math.random().toString(36).slice(2, 10)}`);
  const agentDir = join(home, 'agent');
  const project = join(home, 'project');
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(project, { recursive: true });
  const provider = { baseUrl: dropin.gw.url, api: 'anthropic-messages', apiKey: 'DCTX_KEY' };
  const models = [{ id: MODEL, contextWindow, maxTokens: 8_000 }];
  writeFileSync(join(agentDir, 'models.json'), JSON.stringify({ providers: { dctx: { ...provider, models } } }));
  return { agentDir, project };
}

/**
 * One `pi -p` run (offline: no update check, no telemetry) to its end; its exit code and output. `tz`: the time zone
 * of the date pi writes into its system prompt.
 */
function runPi(home: { agentDir: string; project: string }, key: string, args: string[], tz: string): Promise<CliRun> {
  return runCli(pi, ['--offline', '--model', `dctx/${MODEL}`, ...args], {
    cwd: home.project,
    env: { ...process.env, PI_CODING_AGENT_DIR: home.agentDir, DCTX_KEY: key, PI_OFFLINE: '1', TZ: tz },
  });
}

describe('the pi coding agent through the drop-in Anthropic Messages endpoint', () => {
  it('runs a continued session with a real tool call; the gateway compacts in the background; all is stored', async () => {
    const { anthropic, gw } = dropin;
    const { id: tenantId, key } = await gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    // pi's own compaction out of reach: this test is about the gateway's.
    const home = piHome(10_000_000);
    const turns = [
      `Turn one: what does the shell answer? ${BRIEFING}`,
      'Turn two: and the weather?',
      'Turn three: thanks.',
    ];
    const before = anthropic.messageRequests().length;
    // The model asks for a command; pi runs it and sends its output. The second turn's answer reports a reading over
    // the gateway's in-loop threshold (75 % of the 256K window).
    anthropic.enqueue(
      {
        ...toolCallsReply([{ id: 'toolu_pi_1', name: 'bash', input: { command: SHELL_COMMAND } }], 'Checking.'),
        usage: { input_tokens: 9_000, output_tokens: 20 },
      },
      reply('The shell answers dctx-42.', { usage: { input_tokens: 9_500, output_tokens: 20 } }),
      reply('Sunny all week.', { usage: { input_tokens: 200_000, output_tokens: 20 } }),
      reply('You are welcome.', { usage: { input_tokens: 12_500, output_tokens: 20 } }),
    );
    // pi starts one day and is continued the next: its system prompt carries another date from then on.
    const first = await runPi(home, key, ['-p', turns[0] as string], DAY_BEFORE_TZ);
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain('The shell answers dctx-42.');
    // pi ran the command for real: its output went back as the tool result.
    const afterTool = JSON.stringify(anthropic.messageRequests()[before + 1]?.body.messages);
    expect(afterTool).toContain('toolu_pi_1');
    expect(afterTool).toContain('dctx-42\\nline 1\\nline 2\\nline 3\\n');
    const second = await runPi(home, key, ['-c', '-p', turns[1] as string], DAY_AFTER_TZ);
    expect(second.code, second.err).toBe(0);
    expect(second.out).toContain('Sunny all week.');

    // pi sent no conversation id: the gateway derived one from the opening of its history, the same each time —
    // the system prompt's date aside, which changed.
    const dateOf = (i: number) =>
      /Current date: (\d{4}-\d{2}-\d{2})/.exec(
        JSON.stringify(anthropic.messageRequests()[before + i]?.body.system),
      )?.[1];
    expect(dateOf(0)).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(dateOf(2)).not.toBe(dateOf(0));
    const conversationId = await onlyConversation(gw, tenantId);
    await untilCompacted(gw, key, conversationId);
    const third = await runPi(home, key, ['-c', '-p', turns[2] as string], DAY_AFTER_TZ);
    expect(third.code, third.err).toBe(0);
    expect(third.out).toContain('You are welcome.');

    const requests = anthropic.messageRequests().slice(before);
    expect(requests).toHaveLength(4);
    // Before the compaction: pi's own requests (streamed); after it: the summary in place of turn one.
    expect(requests[0]?.body).toMatchObject({ model: MODEL, stream: true });
    expect(JSON.stringify(requests[2]?.body.messages)).toContain('Note 119:');
    // The compacted request tells the model the date pi wrote today, not the stored one.
    expect(JSON.stringify(requests[3]?.body.system)).toContain(`Current date: ${dateOf(2)}`);
    const compacted = JSON.stringify(requests[3]?.body.messages);
    expect(compacted).toContain('Fix the failing tests of the project.');
    expect(compacted).not.toContain('Note 119:');
    expect(compacted).toContain(turns[1]);
    expect(compacted).toContain(turns[2]);

    const status = await gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
    expect(status.json.compressionCount).toBe(1);
    const replies = ['The shell answers dctx-42.', 'Sunny all week.', 'You are welcome.'];
    await expectStoredOnce(gw, key, conversationId, [...turns, ...replies], {
      search: 'dctx-42',
      toolRow: 'dctx-42',
    });
  });
});
