// The relay of a turn's text over PostgreSQL (infra/db/turnText.ts) on the real server: what one attempt publishes
// reaches the listener of that turn whole and in order, in few notifications, and nothing of another turn does; a
// listener whose connection was killed connects again for the next turn.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  MAX_PIECE_CHARS,
  orderedPieces,
  TurnTextListener,
  type TurnTextPiece,
  TurnTextPublisher,
} from '../../../infra/db/turnText.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';

let testDb: TestDatabase;
let listener: TurnTextListener;
beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  listener = new TurnTextListener(testDb.url);
});
afterAll(async () => {
  await listener?.close();
  await testDb?.drop();
});

const until = async (check: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('turn text relay', () => {
  it('one attempt’s text arrives whole, in order, gathered; another turn’s does not', async () => {
    const pieces: TurnTextPiece[] = [];
    let text = '';
    const stop = await listener.subscribe('conv-1:turn-a', (piece) => pieces.push(piece));
    const order = orderedPieces({ text: (t) => (text += t), restart: () => (text += '<restart>') });
    const stopOrdered = await listener.subscribe('conv-1:turn-a', order);
    const other: TurnTextPiece[] = [];
    const stopOther = await listener.subscribe('conv-1:turn-b', (piece) => other.push(piece));

    const publisher = new TurnTextPublisher(testDb.db, 'conv-1:turn-a', 1);
    const words = Array.from({ length: 200 }, (_, i) => `word${i} `);
    for (const word of words) publisher.push(word);
    publisher.push('é'.repeat(MAX_PIECE_CHARS + 10)); // more than one notification can carry
    await publisher.close();
    const expected = words.join('') + 'é'.repeat(MAX_PIECE_CHARS + 10);
    await until(() => text.length >= expected.length);
    expect(text).toBe(expected);
    expect(pieces.map((p) => p.seq)).toEqual(pieces.map((_, i) => i));
    expect(pieces.every((p) => p.attempt === 1 && p.text.length <= MAX_PIECE_CHARS)).toBe(true);
    expect(pieces.length).toBeLessThan(10); // gathered, not one per delta
    expect(other).toEqual([]);
    await Promise.all([stop(), stopOrdered(), stopOther()]);

    // Unsubscribed: nothing more is heard.
    const late = new TurnTextPublisher(testDb.db, 'conv-1:turn-a', 2);
    late.push('after the end');
    await late.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(pieces.some((p) => p.attempt === 2)).toBe(false);
  });

  it('a listener whose connection was killed connects again for the next turn', async () => {
    const first: string[] = [];
    const stop = await listener.subscribe('conv-2:turn-a', (piece) => first.push(piece.text));
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'dc-turn-text'
               AND datname = current_database()`.execute(testDb.db);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await stop();
    const heard: string[] = [];
    const again = await listener.subscribe('conv-2:turn-b', (piece) => heard.push(piece.text));
    const publisher = new TurnTextPublisher(testDb.db, 'conv-2:turn-b', 1);
    publisher.push('still relayed');
    await publisher.close();
    await until(() => heard.length > 0);
    expect(heard).toEqual(['still relayed']);
    await again();
  });
});
