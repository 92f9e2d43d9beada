import { describe, expect, it } from 'vitest';
import {
  buildSummaryPrompt,
  CONTENT_TRUNCATION_MARKER,
  classifyWindow,
  normalizeFocusTopic,
  SUMMARY_TEMPLATE,
  serializeTurns,
  summaryText,
} from '../../../engine/index.js';
import { asst, call, chars, sys, tool, user } from './builders.js';

const HEADINGS = [
  '## Goal',
  '## Constraints & Preferences',
  '## Progress',
  '### Done',
  '### In Progress',
  '### Blocked',
  '## Key Decisions',
  '## Relevant Files',
  '## Next Steps',
  '## Critical Context',
];

describe('serialisation (§8.5.2)', () => {
  it('the spec example, exactly', () => {
    const turns = [user('hi'), asst('ok', [call('c1', 'read_file', '{}')]), tool('c1', 'res')];
    expect(serializeTurns(turns)).toBe(
      '[USER]: hi\n\n[ASSISTANT]: ok\n[Tool calls:\n  read_file({})\n]\n\n[TOOL RESULT c1]: res',
    );
  });
  it('labels other roles in upper case; a missing tool id is empty; null content is empty', () => {
    expect(serializeTurns([sys('rules')])).toBe('[SYSTEM]: rules');
    expect(serializeTurns([{ role: 'tool', content: null }])).toBe('[TOOL RESULT ]: ');
  });
  it('array content: text parts and [image], joined with newlines', () => {
    const parts = [
      { type: 'text' as const, text: 'look' },
      { type: 'image_url' as const, image_url: { url: 'u' } },
    ];
    expect(serializeTurns([user(parts)])).toBe('[USER]: look\n[image]');
  });
  it('several calls, one line each', () => {
    const a = asst(null, [call('a', 'f', '{"x":1}'), call('b', 'g', '')]);
    expect(serializeTurns([a])).toBe('[ASSISTANT]: \n[Tool calls:\n  f({"x":1})\n  g()\n]');
  });
  it('text over 6,000 characters → first 4,000 + marker + last 1,500 (code points)', () => {
    const text = `${'a'.repeat(4000)}${'字'.repeat(501)}${'b'.repeat(1500)}`; // 6,001 characters
    expect(serializeTurns([user(text)])).toBe(
      `[USER]: ${'a'.repeat(4000)}${CONTENT_TRUNCATION_MARKER}${'b'.repeat(1500)}`,
    );
    const exact = '😀'.repeat(6000); // 12,000 UTF-16 units, 6,000 characters → unchanged
    expect(serializeTurns([user(exact)])).toBe(`[USER]: ${exact}`);
  });
  it('arguments over 1,500 characters → first 1,200 + "..."', () => {
    const long = chars(1501);
    expect(serializeTurns([asst('', [call('c', 'f', long)])])).toBe(
      `[ASSISTANT]: \n[Tool calls:\n  f(${chars(1200)}...)\n]`,
    );
    expect(serializeTurns([asst('', [call('c', 'f', chars(1500))])])).toContain(`f(${chars(1500)})`);
  });
});

describe('window classification (§8.5.1)', () => {
  const body = '## Goal\nold';
  it('collects bodies and keeps merged own content with the tool calls', () => {
    const merged = asst(`${summaryText(body)}\n\nworking on it`, [call('c1')]);
    const window = [user(summaryText(body)), merged, tool('c1', 'r')];
    const out = classifyWindow(window, body);
    expect(out.bodies).toEqual([body, body]);
    expect(out.previous).toBe(`${body}\n\n${body}`);
    expect(out.turns).toEqual([{ ...merged, content: 'working on it' }, tool('c1', 'r')]);
  });
  it('no summaries → previous null, all rows serialised', () => {
    const window = [user('a'), asst('b')];
    expect(classifyWindow(window, 'stale previous')).toEqual({ bodies: [], previous: null, turns: window });
  });
  it('a pure summary row contributes no turn', () => {
    expect(classifyWindow([asst(summaryText(body))], body).turns).toEqual([]);
  });
});

describe('focus topic (§8.5.4)', () => {
  it('trimmed; empty means none; cut to 500 characters', () => {
    expect(normalizeFocusTopic('  db migration  ')).toBe('db migration');
    expect(normalizeFocusTopic('   ')).toBeNull();
    expect(normalizeFocusTopic(undefined)).toBeNull();
    expect(normalizeFocusTopic(` ${'字'.repeat(600)} `)).toBe('字'.repeat(500));
  });
});

describe('summary prompt (§8.5.4, §8.5.5)', () => {
  const turns = [user('hi')];
  const turnsText = '[USER]: hi';
  it('first compaction: blocks in order, exact label, template, target line, output rule', () => {
    const prompt = buildSummaryPrompt({ turns, previous: null, budgetTokens: 4000, focusTopic: null });
    const blocks = prompt.split('\n\n');
    expect(blocks[0]).toMatch(/structured handoff summary/);
    expect(blocks[1]).toMatch(/not addressed to you/);
    expect(blocks[1]).toMatch(/language of the conversation/);
    expect(blocks[2]).toBe(`TURNS TO SUMMARIZE:\n${turnsText}`);
    expect(blocks[3]).toContain(SUMMARY_TEMPLATE);
    expect(blocks[4]).toMatch(/^Target ~4000 tokens\. .*exact file paths, commands, results, error messages/);
    expect(blocks[5]).toMatch(/starting with "## Goal"/);
    expect(blocks).toHaveLength(6);
    expect(prompt).not.toContain('PREVIOUS SUMMARY:');
    expect(prompt).not.toContain('FOCUS TOPIC:');
  });
  it('embeds the §8.5.2 serialisation of the turns verbatim', () => {
    const rows = [user('hi'), asst('ok', [call('c1', 'read_file', '{}')]), tool('c1', 'res'), user(chars(7000))];
    const prompt = buildSummaryPrompt({ turns: rows, previous: null, budgetTokens: 2000, focusTopic: null });
    expect(prompt).toContain(`\n\nTURNS TO SUMMARIZE:\n${serializeTurns(rows)}\n\n`);
  });
  it('the template headings are exact and in order', () => {
    const headings = SUMMARY_TEMPLATE.split('\n').filter((line) => line.startsWith('#'));
    expect(headings).toEqual(HEADINGS);
  });
  it('iterative update: update task, previous summary, new turns, update rules before the template', () => {
    const previous = '## Goal\nearlier work';
    const prompt = buildSummaryPrompt({ turns, previous, budgetTokens: 12000, focusTopic: null });
    const blocks = prompt.split('\n\n');
    expect(blocks[0]).toMatch(/existing context-compaction summary/);
    expect(blocks[0]).toMatch(/new conversation turns happened since it was written/);
    expect(blocks[2]).toBe(`PREVIOUS SUMMARY:\n${previous}`);
    expect(blocks[3]).toBe(`NEW TURNS TO INCORPORATE:\n${turnsText}`);
    expect(blocks[4]).toMatch(
      /still relevant.*new progress.*"In Progress" to "Done".*clearly obsolete.*concrete values/,
    );
    expect(blocks[5]).toContain(SUMMARY_TEMPLATE);
    expect(blocks[6]).toMatch(/^Target ~12000 tokens\./);
    expect(prompt).not.toContain('TURNS TO SUMMARIZE:');
  });
  it('focus block last, with the 60–70 % instruction', () => {
    const prompt = buildSummaryPrompt({ turns, previous: null, budgetTokens: 2000, focusTopic: 'auth bug' });
    const last = prompt.split('\n\n').at(-1) as string;
    expect(last.startsWith('FOCUS TOPIC: auth bug\n')).toBe(true);
    expect(last).toMatch(/60–70 %/);
    expect(last).toMatch(/other sections present/);
  });
});
