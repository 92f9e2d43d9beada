// Page cursors of the list routes (workers/gateway/pageCursor.ts, issue #14 §6): a cursor round-trips its key, and
// one of another list, another scope, with a missing or mistyped field, or that is not a cursor at all is refused
// with 400 naming `cursor` — never turned into a wrong page. Also the LIKE escaping of the title filter.
import { describe, expect, it } from 'vitest';
import { likeLiteral } from '../../../infra/db/conversationList.js';
import { decodeCursor, encodeCursor } from '../../../workers/gateway/pageCursor.js';

const FIELDS = { position: 'number', id: 'number' } as const;

describe('page cursors', () => {
  it('round-trip their key, url-safe', () => {
    const cursor = encodeCursor('transcript', 's1', { position: 12, id: 9_007_199_254_740_991 });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, 'transcript', 's1', FIELDS)).toEqual({ position: 12, id: 9_007_199_254_740_991 });
  });

  it.each([
    ['another list', encodeCursor('messages-by-id', 's1', { position: 1, id: 2 })],
    ['another session', encodeCursor('transcript', 's2', { position: 1, id: 2 })],
    ['a missing field', encodeCursor('transcript', 's1', { position: 1 })],
    ['a text id', encodeCursor('transcript', 's1', { position: 1, id: '2' })],
    ['a fractional id', encodeCursor('transcript', 's1', { position: 1, id: 2.5 })],
    ['not JSON', Buffer.from('nope').toString('base64url')],
    ['JSON that is not an object', Buffer.from('42').toString('base64url')],
  ])('refuses %s with 400 naming cursor', (_what, cursor) => {
    expect(() => decodeCursor(cursor, 'transcript', 's1', FIELDS)).toThrow(
      expect.objectContaining({ statusCode: 400, message: expect.stringContaining('cursor') }),
    );
  });
});

describe('likeLiteral', () => {
  it('makes % _ and \\ match themselves', () => {
    expect(likeLiteral('100%_a\\b')).toBe('100\\%\\_a\\\\b');
    expect(likeLiteral('plain')).toBe('plain');
  });
});
