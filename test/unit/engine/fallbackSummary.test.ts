import { describe, expect, it } from 'vitest';
import {
  buildFallbackSummaryBody,
  type ChatMessage,
  codePointLength,
  FALLBACK_TRUNCATION_SUFFIX,
  type SummaryFailureClass,
  summaryText,
} from '../../../engine/index.js';
import { asst, call, chars, tool, user } from './builders.js';

const build = (
  window: ChatMessage[],
  previousSummary: string | null = null,
  failureClass: SummaryFailureClass = 'error',
) => buildFallbackSummaryBody({ window, previousSummary, failureClass });

const section = (body: string, heading: string): string[] => {
  const lines = body.split('\n');
  const start = lines.indexOf(heading);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => l.startsWith('## ') || l.startsWith('### '));
  return end < 0 ? rest : rest.slice(0, end);
};

describe('fallback summary (§9.5)', () => {
  it('exact body for a small window', () => {
    const window = [
      user('Please fix   the\nlogin bug'),
      asst('Looking at src/auth/login.ts now.', [call('c1', 'read_file', '{"path":"src/auth/login.ts"}')]),
      tool('c1', 'line 1\n  Error: token expired  \nmore'),
    ];
    expect(build(window)).toBe(
      [
        '## Goal',
        "User asked: 'Please fix the login bug'",
        '## Constraints & Preferences',
        '(not recorded)',
        '## Progress',
        '### Done',
        '- Called tool(s): read_file',
        '### In Progress',
        '(unknown)',
        '### Blocked',
        '- Error: token expired',
        '## Key Decisions',
        '(not recorded)',
        '## Relevant Files',
        '- src/auth/login.ts',
        '## Next Steps',
        '- Continue from the messages after this summary; the newest user message takes priority.',
        '## Critical Context',
        'Summary generation was unavailable; this summary was assembled mechanically for 3 compacted message(s). Failure class: error.',
        'Last compacted messages:',
        '[USER]: Please fix   the\nlogin bug',
        '[ASSISTANT]: Looking at src/auth/login.ts now.\n[Tool calls:\n  read_file({"path":"src/auth/login.ts"})\n]',
        '[TOOL RESULT c1]: line 1\n  Error: token expired  \nmore',
      ].join('\n'),
    );
  });

  it('no real user message → the fixed goal line; no tools or requests → (nothing recorded)', () => {
    const body = build([asst('thinking'), user('   ')], null, 'empty');
    expect(body).toContain('\nUser asked: (no user request in the compacted turns)\n');
    expect(section(body, '### Done')).toEqual(['(nothing recorded)']);
    expect(section(body, '### Blocked')).toEqual(['(none recorded)']);
    expect(section(body, '## Relevant Files')).toEqual(['(none recorded)']);
    expect(body).toContain('Failure class: empty.');
  });

  it('goal: collapsed, cut to 500 characters + "..."', () => {
    const long = `  ${'字'.repeat(600)}  `;
    expect(build([user(long)])).toContain(`User asked: '${'字'.repeat(500)}...'`);
  });

  it('earlier requests: newest 4, oldest first, 300 characters, each request once (§18.6)', () => {
    const window = ['r1', 'r2', 'dup', 'r3', 'dup', 'r4', chars(301), 'goal', 'goal'].map((t) => user(t));
    const done = section(build(window), '### Done');
    expect(done).toEqual([
      "- Earlier request: 'r3'",
      "- Earlier request: 'dup'",
      "- Earlier request: 'r4'",
      `- Earlier request: '${chars(300)}...'`,
    ]);
  });

  it('tool names: distinct, first-use order, at most 12, each at most 64 characters', () => {
    const names = ['b', 'a', 'b', chars(70, 'n'), ...Array.from({ length: 12 }, (_, i) => `t${i}`)];
    const window = [
      user('go'),
      asst(
        null,
        names.map((n, i) => call(`c${i}`, n)),
      ),
    ];
    const done = section(build(window), '### Done');
    expect(done[0]).toBe(
      `- Called tool(s): b, a, ${chars(64, 'n')}..., ${Array.from({ length: 9 }, (_, i) => `t${i}`).join(', ')}`,
    );
  });

  it('error lines: first matching line per tool row, newest occurrence kept, newest 5 oldest first (§18.7)', () => {
    const rows = [
      tool('1', 'ok\nfatal: one'),
      tool('2', 'Traceback (most recent call last):\nValueError'),
      tool('3', 'fatal: one'),
      tool('4', 'no errors here\nexception raised'),
      tool('5', 'build FAILED'),
      tool('6', `failure ${chars(300)}`),
      tool('7', 'all good'),
      tool('8', 'ERROR x\nerror y'),
    ];
    const blocked = section(build([user('go'), ...rows]), '### Blocked');
    expect(blocked).toEqual([
      '- fatal: one',
      '- exception raised',
      '- build FAILED',
      `- failure ${chars(192)}...`,
      '- ERROR x',
    ]);
  });

  it('paths: argument keys in order, then text tokens; distinct; filters; at most 12 (§18.8)', () => {
    const args = JSON.stringify({ filename: 'b/f.md', path: 'a/p.ts', other: 'x/y.ts', file: 'c/one.js' });
    const rows = [
      user('see (src/app.tsx), "docs/readme.md", `lib/x.c`; https://host/a/b.js and foo/bar and dir/file.'),
      asst('done [a/p.ts] <cfg/settings.yaml>!', [call('c1', 'edit', args), call('c2', 'edit', 'not json')]),
      tool('c1', 'tool text with tool/out.txt is not scanned'),
    ];
    expect(section(build(rows), '## Relevant Files')).toEqual([
      '- src/app.tsx',
      '- docs/readme.md',
      '- lib/x.c',
      '- a/p.ts',
      '- c/one.js',
      '- b/f.md',
      '- cfg/settings.yaml',
    ]);
    const many = [user(Array.from({ length: 20 }, (_, i) => `d/f${i}.ts`).join(' ')), user(`x/${chars(250)}.ts`)];
    const files = section(build(many), '## Relevant Files');
    expect(files).toHaveLength(12);
    expect(files[11]).toBe('- d/f11.ts');
    expect(section(build([user(`x/${chars(250)}.ts`)]), '## Relevant Files')).toEqual([`- x/${chars(198)}...`]);
  });

  it('merged summaries contribute their own text; previous summary excerpt cut to 3,000', () => {
    const prev = `## Goal\n${chars(3100, 'p')}`;
    const window = [asst(summaryText(prev)), user(`${summaryText(prev)}\n\nopen src/own.ts please`)];
    const body = build(window, prev);
    expect(body).toContain("User asked: 'open src/own.ts please'");
    expect(section(body, '## Relevant Files')).toEqual(['- src/own.ts']);
    expect(body).toContain(
      `Previous summary (verbatim excerpt):\n${`## Goal\n${chars(3100, 'p')}`.slice(0, 3000)}...\n`,
    );
    expect(body.endsWith('Last compacted messages:\n[USER]: open src/own.ts please')).toBe(true);
  });

  it('last compacted messages: the last 8 rows of T with input content, each text cut to 700', () => {
    const rows = Array.from({ length: 10 }, (_, i) => user(`m${i} ${chars(800)}`));
    const body = build(rows);
    const last = body.slice(body.indexOf('Last compacted messages:\n') + 'Last compacted messages:\n'.length);
    const blocks = last.split('\n');
    expect(blocks).toHaveLength(8);
    expect(blocks[0]).toBe(`[USER]: ${`m2 ${chars(800)}`.slice(0, 700)}...`);
  });

  it('a body over 8,000 characters is cut to exactly 8,000 with the suffix; the unavailable sentence survives', () => {
    const prev = '字'.repeat(5000);
    const rows = Array.from({ length: 8 }, (_, i) => user(`${i}${'語'.repeat(900)}`));
    const body = build([asst(summaryText(prev)), ...rows], prev);
    expect(codePointLength(body)).toBe(8000);
    expect(body.endsWith(FALLBACK_TRUNCATION_SUFFIX)).toBe(true);
    expect(body).toContain(
      'Summary generation was unavailable; this summary was assembled mechanically for 9 compacted message(s).',
    );
  });

  it('the compacted-count and class are substituted; never an error message', () => {
    expect(build([user('a'), asst('b')], null, 'cooldown')).toContain(
      'assembled mechanically for 2 compacted message(s). Failure class: cooldown.',
    );
  });
});
