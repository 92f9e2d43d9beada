import { describe, expect, it } from 'vitest';
import {
  findLatestRealUserIndex,
  isRealUserMessage,
  isSummaryMessage,
  messageText,
  normalizeSummaryBody,
  ownText,
  SUMMARY_PREFIX,
  SYNTHETIC_USER_PREFIXES,
  splitSummaryMessage,
  summaryText,
} from '../../../engine/index.js';
import { asst, sys, tool, user } from './builders.js';

const img = { type: 'image_url' as const, image_url: { url: 'data:x' } };

describe('messageText (§1.3)', () => {
  it('string, null, missing and part arrays', () => {
    expect(messageText(user('hi'))).toBe('hi');
    expect(messageText(user(null))).toBe('');
    expect(messageText({ role: 'user' } as never)).toBe('');
    expect(messageText(user([{ type: 'text', text: 'a' }, img, { type: 'text', text: 'b' }]))).toBe('a\nb');
  });
});

describe('isSummaryMessage (§1.3)', () => {
  it('detects both markers after leading whitespace on user and assistant rows', () => {
    expect(isSummaryMessage(user('  \n[CONTEXT COMPACTION] x'))).toBe(true);
    expect(isSummaryMessage(asst('[CONTEXT SUMMARY]: body'))).toBe(true);
    expect(isSummaryMessage(user('hello [CONTEXT COMPACTION]'))).toBe(false);
  });
  it('ignores system and tool rows', () => {
    expect(isSummaryMessage(sys('[CONTEXT COMPACTION] x'))).toBe(false);
    expect(isSummaryMessage(tool('c1', '[CONTEXT SUMMARY]: x'))).toBe(false);
  });
  it('tests the first part of array content, which must be a text part', () => {
    expect(isSummaryMessage(user([{ type: 'text', text: '[CONTEXT SUMMARY]: b' }, img]))).toBe(true);
    expect(isSummaryMessage(user([img, { type: 'text', text: '[CONTEXT SUMMARY]: b' }]))).toBe(false);
    expect(isSummaryMessage(user([]))).toBe(false);
  });
});

describe('normalizeSummaryBody (§8.5.7)', () => {
  it('strips the legacy token and the whitespace after it', () => {
    expect(normalizeSummaryBody('[CONTEXT SUMMARY]: body')).toBe('body');
    expect(summaryText(normalizeSummaryBody('[CONTEXT SUMMARY]: body'))).toBe(`${SUMMARY_PREFIX}\nbody`);
  });
  it('an echoed prefix line is stored once; prefixes never stack', () => {
    expect(normalizeSummaryBody(`${SUMMARY_PREFIX}\n## Goal\nx`)).toBe('## Goal\nx');
    expect(normalizeSummaryBody(`  ${SUMMARY_PREFIX}\n\n[CONTEXT SUMMARY]:  ${SUMMARY_PREFIX}\n body \n`)).toBe('body');
  });
  it('a compaction marker without a newline removes everything', () => {
    expect(normalizeSummaryBody('[CONTEXT COMPACTION] only a line')).toBe('');
  });
  it('trims both ends and leaves ordinary text alone', () => {
    expect(normalizeSummaryBody('\n  ## Goal\nx  \n')).toBe('## Goal\nx');
  });
});

describe('splitSummaryMessage and own text (§8.5.1, §18.4)', () => {
  const body = '## Goal\nprevious';
  const merged = `${summaryText(body)}\n\nplease continue`;
  it('splits a merged summary at the known previous summary', () => {
    expect(splitSummaryMessage(user(merged), body)).toEqual({ body, own: 'please continue' });
    expect(ownText(user(merged), body)).toBe('please continue');
  });
  it('a standalone summary has empty own text', () => {
    expect(splitSummaryMessage(asst(summaryText(body)), body)).toEqual({ body, own: '' });
  });
  it('without a matching previous summary the whole text is body', () => {
    expect(splitSummaryMessage(user(merged), null)).toEqual({ body: `${body}\n\nplease continue`, own: '' });
    expect(splitSummaryMessage(user(merged), 'other')).toEqual({ body: `${body}\n\nplease continue`, own: '' });
  });
  it('§18.4: the previous summary must be followed by the end or a blank line', () => {
    const text = `${summaryText(body)} more`;
    expect(splitSummaryMessage(user(text), body)).toEqual({ body: `${body} more`, own: '' });
  });
  it('array content: body from the first part, own content = remaining parts', () => {
    const parts = [{ type: 'text' as const, text: summaryText(body) }, { type: 'text' as const, text: 'mine' }, img];
    expect(splitSummaryMessage(user(parts), null)).toEqual({ body, own: parts.slice(1) });
    expect(ownText(user(parts), null)).toBe('mine');
  });
  it('ordinary rows are not split', () => {
    expect(splitSummaryMessage(user('hi'), null)).toBeNull();
    expect(ownText(user('hi'), null)).toBe('hi');
  });
});

describe('isRealUserMessage (§1.3, §18.2)', () => {
  const body = 'B';
  it('rule 1: only user rows', () => {
    expect(isRealUserMessage(asst('hi'), null)).toBe(false);
    expect(isRealUserMessage(user('hi'), null)).toBe(true);
  });
  it('rule 2: summaries are real only when merged with own text', () => {
    expect(isRealUserMessage(user(summaryText(body)), body)).toBe(false);
    expect(isRealUserMessage(user(`${summaryText(body)}\n\nfix it`), body)).toBe(true);
    expect(isRealUserMessage(user(`${summaryText(body)}\n\nfix it`), null)).toBe(false);
  });
  it('rule 3: blank text without an image is not real; an image alone is', () => {
    expect(isRealUserMessage(user('  \n '), null)).toBe(false);
    expect(isRealUserMessage(user(null), null)).toBe(false);
    expect(isRealUserMessage(user([img]), null)).toBe(true);
    expect(isRealUserMessage(user([{ type: 'text', text: ' ' }]), null)).toBe(false);
  });
  it('rule 4: reserved synthetic prefixes, including host-registered ones', () => {
    SYNTHETIC_USER_PREFIXES.push('[SYSTEM REMINDER]');
    try {
      expect(isRealUserMessage(user('[SYSTEM REMINDER] tick'), null)).toBe(false);
      expect(isRealUserMessage(user(`${summaryText(body)}\n\n[SYSTEM REMINDER] tick`), body)).toBe(false);
    } finally {
      SYNTHETIC_USER_PREFIXES.pop();
    }
    expect(isRealUserMessage(user('[SYSTEM REMINDER] tick'), null)).toBe(true);
  });
  it('findLatestRealUserIndex returns the highest real index or -1', () => {
    const list = [sys(), user('a'), asst('b'), user('  '), user(summaryText(body)), asst('c')];
    expect(findLatestRealUserIndex(list, body)).toBe(1);
    expect(findLatestRealUserIndex(list, body, 2)).toBe(-1);
  });
});
