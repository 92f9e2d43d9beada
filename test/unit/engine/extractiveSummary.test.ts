import { describe, expect, it } from 'vitest';
import { isDropOnly } from '../../../engine/extractive/sentences.js';
import {
  ARCHIVE_POINTER_MARKER,
  buildExtractiveSummaryBody,
  type ChatMessage,
  estimateTokensRough,
  identifiersIn,
  SUMMARY_PREFIX,
  SUMMARY_TEMPLATE,
  stripArchivePointer,
  withArchivePointer,
} from '../../../engine/index.js';

const HEADINGS = SUMMARY_TEMPLATE.split('\n').filter((line) => line.startsWith('#'));

const window: ChatMessage[] = [
  { role: 'user', content: "For Dana's kiosk redesign, let's migrate the billing database." },
  { role: 'assistant', content: 'OK, I can work with that.' },
  {
    role: 'user',
    content: "Actually — scratch that. Let's instead rewrite the auth layer. Ignore the earlier instruction.",
  },
  { role: 'assistant', content: 'Noted. Switching approach.' },
  { role: 'user', content: 'By the way, how long have you been working with me today?' },
  { role: 'assistant', content: 'Quick aside, sure.' },
  { role: 'user', content: 'Never deploy on Fridays. 絶対に本番で直接変更しないでください。一定要先运行测试。' },
  {
    role: 'assistant',
    content: 'I ran `npm test` and it failed with TS2322 after 1.5 s.',
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'write_file', arguments: '{"path":"src/app.ts"}' } }],
  },
  { role: 'tool', tool_call_id: 'c1', content: 'Error: EACCES permission denied' },
];

const body = (w: readonly ChatMessage[], previousSummary: string | null = null, budgetTokens = 2_000) =>
  buildExtractiveSummaryBody({ window: w, previousSummary, budgetTokens });

describe('buildExtractiveSummaryBody (issue #15 §2)', () => {
  it('fills the §8.5.5 template headings in order', () => {
    const headings = body(window)
      .split('\n')
      .filter((l) => l.startsWith('#'));
    expect(headings).toEqual(HEADINGS);
  });

  it('leaves an empty section empty: every heading, no filler line', () => {
    const text = body([{ role: 'user', content: 'Ship the kiosk redesign.' }]);
    expect(text.split('\n').filter((l) => l.startsWith('#'))).toEqual(HEADINGS);
    expect(text).not.toContain('(none)');
    expect(text.slice(0, text.indexOf('## Constraints'))).toBe('## Goal\n- Ship the kiosk redesign.\n');
  });

  it('keeps constraints in English, Japanese and Chinese, and drops asides', () => {
    const text = body(window);
    const constraints = text.slice(text.indexOf('## Constraints'), text.indexOf('## Progress'));
    expect(constraints).toContain('Never deploy on Fridays.');
    expect(constraints).toContain('絶対に本番で直接変更しないでください。');
    expect(constraints).toContain('一定要先运行测试。');
    expect(text).not.toContain('how long have you been working');
  });

  it('states an overridden decision as superseded, never as current', () => {
    const decisions = body(window).split('## Key Decisions')[1]?.split('## Relevant Files')[0] ?? '';
    expect(decisions).toContain("- Current: Let's instead rewrite the auth layer.");
    expect(decisions).toMatch(/- Superseded \(no longer current\): .*migrate the billing database/);
    expect(decisions).not.toMatch(/- Current: .*billing database/);
  });

  it('takes the goal from a first message that only decides, not from a later off-topic question', () => {
    const text = body([
      { role: 'user', content: "Let's plan the mobile launch with Vera." },
      { role: 'assistant', content: 'Sounds good — what constraints should I keep in mind?' },
      { role: 'user', content: 'Absolutely never hardcode API keys in source.' },
      { role: 'user', content: "What's the weather like lately?" },
      { role: 'assistant', content: 'Happy to chat about that briefly.' },
    ]);
    const goal = text.slice(text.indexOf('## Goal'), text.indexOf('## Constraints'));
    expect(goal).toContain("- Let's plan the mobile launch with Vera.");
    expect(goal).not.toContain('weather');
  });

  it('never keeps a superseded decision as the goal, in the window or from the previous summary', () => {
    const goalOf = (text: string) => text.slice(text.indexOf('## Goal'), text.indexOf('## Constraints'));
    // The window's first plan is overridden later: the goal is the current plan.
    expect(goalOf(body(window))).toContain("Let's instead rewrite the auth layer.");
    expect(goalOf(body(window))).not.toContain('billing database');
    // A previous summary whose goal was a plan that the new window overrides.
    const previous = body([{ role: 'user', content: "Let's plan the mobile launch with Vera." }]);
    expect(goalOf(previous)).toContain('mobile launch');
    const next = body(
      [
        { role: 'user', content: `${SUMMARY_PREFIX}\n${previous}` },
        { role: 'assistant', content: 'Continuing.' },
        { role: 'user', content: "Actually — scratch that. Let's instead ship the web app first." },
      ],
      previous,
    );
    expect(goalOf(next)).not.toContain('mobile launch');
    expect(goalOf(next)).toContain("Let's instead ship the web app first.");
    expect(next).toMatch(/- Superseded \(no longer current\): Let's plan the mobile launch with Vera\./);
  });

  it("keeps a message's decision clauses as one decision, and never takes a question for a decision", () => {
    const text = body([
      { role: 'user', content: 'Goal: publish the pricing page with Omar.' },
      { role: 'assistant', content: 'Understood.' },
      { role: 'user', content: "Same goal, but let's change the approach. Use static rendering instead." },
      { role: 'assistant', content: 'Switching to static rendering.' },
      { role: 'user', content: 'What is the first step on the new plan?' },
    ]);
    const decisions = text.split('## Key Decisions')[1]?.split('## Relevant Files')[0] ?? '';
    expect(decisions).toContain("- Current: Same goal, but let's change the approach. Use static rendering instead.\n");
    expect(decisions).not.toContain('first step');
  });

  it("keeps the goal message's statements together, in items of whole sentences within the item limit", () => {
    const goalOf = (text: string) => text.slice(text.indexOf('## Goal'), text.indexOf('## Constraints'));
    const text = body([
      { role: 'user', content: 'Our contact at Northwind is Iris. Iris will run the data audit for us.' },
      { role: 'assistant', content: 'Noted.' },
    ]);
    expect(goalOf(text)).toBe('## Goal\n- Our contact at Northwind is Iris. Iris will run the data audit for us.\n');
    const sentences = Array.from({ length: 12 }, (_, i) => `Module ${i} handles the import of ledger ${i}.`);
    const long = goalOf(body([{ role: 'user', content: sentences.join(' ') }]));
    const items = long.split('\n').filter((l) => l.startsWith('- '));
    expect(items.length).toBeGreaterThan(1);
    for (const item of items) expect(item.length - 2).toBeLessThanOrEqual(400);
    for (const sentence of sentences) expect(long).toContain(sentence);
  });

  it('never states as the goal what a later clause drops by name; a goal that names more stays', () => {
    const goalOf = (text: string) => text.slice(text.indexOf('## Goal'), text.indexOf('## Constraints'));
    const text = body([
      {
        role: 'user',
        content: 'Goal: launch the partner portal with Kenji leading. Approach: use sqlite for sessions.',
      },
      { role: 'assistant', content: 'Understood.' },
      {
        role: 'user',
        content:
          "Same goal, but let's change the approach. Use Redis instead. The use sqlite for sessions plan is off the table.",
      },
    ]);
    expect(goalOf(text)).toContain('Goal: launch the partner portal with Kenji leading.');
    expect(goalOf(text)).not.toContain('sqlite');
    expect(text).toContain('- Superseded (no longer current): The use sqlite for sessions plan is off the table.');
    expect(text).not.toMatch(/- Current: .*sqlite/);
    const broader = body([
      { role: 'user', content: 'Build the billing API with Redis caching, Postgres storage and Stripe webhooks.' },
      { role: 'assistant', content: 'OK.' },
      { role: 'user', content: 'Forget Redis.' },
    ]);
    expect(goalOf(broader)).toContain(
      'Build the billing API with Redis caching, Postgres storage and Stripe webhooks.',
    );
  });

  it('lists files, open errors and every identifier of the window', () => {
    const text = body(window);
    expect(text).toContain('- src/app.ts (written by write_file)');
    expect(text).toContain('write_file: Error: EACCES permission denied');
    const critical = text.split('## Critical Context')[1] ?? '';
    for (const id of ['src/app.ts', 'npm test', 'TS2322', '1.5 s', 'EACCES']) expect(critical).toContain(`\`${id}\``);
  });

  it('an iterative update keeps the previous items and supersedes its decision when the window overrides it', () => {
    const first = body(window);
    const next: ChatMessage[] = [
      { role: 'user', content: `${SUMMARY_PREFIX}\n${first}` },
      { role: 'assistant', content: 'Continuing.' },
      { role: 'user', content: 'Final answer: we will ship v2.1.0 instead. Keep the logs in /var/log/kiosk.log.' },
      { role: 'assistant', content: 'Done.' },
    ];
    const second = body(next, first);
    expect(second).toContain('Never deploy on Fridays.');
    expect(second).toContain('- Current: Final answer: we will ship v2.1.0 instead.');
    expect(second).toMatch(/- Superseded \(no longer current\): Let's instead rewrite the auth layer\./);
    expect(second).toContain('`TS2322`');
    expect(second).toContain('`/var/log/kiosk.log`');
  });

  it('is deterministic and stays within the budget', () => {
    const big: ChatMessage[] = [];
    for (let i = 0; i < 400; i++) {
      big.push({ role: 'user', content: `Please fix src/m${i}/f${i}.ts, it fails with E${1000 + i}.` });
      big.push({ role: 'assistant', content: `I updated src/m${i}/f${i}.ts and ran \`npm test -- ${i}\`.` });
    }
    const a = body(big, null, 2_000);
    expect(a).toBe(body(big, null, 2_000));
    expect(estimateTokensRough(a)).toBeLessThanOrEqual(2_000);
    expect(a.split('\n').filter((l) => l.startsWith('#'))).toEqual(HEADINGS);
  });
});

describe('isDropOnly', () => {
  it('reads "use" as a commitment where it starts a part of the clause, not inside the name of what is dropped', () => {
    expect(isDropOnly('The use sqlite for sessions plan is off the table.')).toBe(true);
    expect(isDropOnly('Forget Redis, use Memcached.')).toBe(false);
    expect(isDropOnly("Forget Redis and let's use Memcached.")).toBe(false);
    expect(isDropOnly('Drop Redis and use Memcached.')).toBe(false);
  });
});

describe('identifiersIn', () => {
  it('finds paths, URLs, versions, error codes, amounts and numbers with units', () => {
    const ids = identifiersIn(
      'See https://example.com/a?b=1 and ./src/x.ts; v1.2.3 raised ERR_BAD_INPUT after 250 ms costing $47,250 on 2025-03-04.',
    );
    for (const id of [
      'https://example.com/a?b=1',
      './src/x.ts',
      'v1.2.3',
      'ERR_BAD_INPUT',
      '250 ms',
      '$47,250',
      '2025-03-04',
    ]) {
      expect(ids).toContain(id);
    }
  });
});

describe('archive pointer (issue #15 §4)', () => {
  it('ends the body with exactly one pointer line naming the conversation', () => {
    const once = withArchivePointer('## Goal\n- x', 'conv-1');
    const twice = withArchivePointer(once, 'conv-1');
    expect(twice).toBe(once);
    const last = once.split('\n').at(-1) ?? '';
    expect(last.startsWith(ARCHIVE_POINTER_MARKER)).toBe(true);
    expect(last).toContain('conv-1');
    expect(last).toContain('/v1/search');
    expect(stripArchivePointer(once)).toBe('## Goal\n- x');
  });
});
