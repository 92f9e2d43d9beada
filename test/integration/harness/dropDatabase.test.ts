// The per-file test database is dropped with a bounded retry on transient errors only (issue #9 §11). The error seen
// in CI — 42501 from terminating an autovacuum worker's session — cannot be produced on demand by the owner, which is
// not a superuser (it would need a session of a role it is no member of). What can be produced for real is the other
// transient class, 55006: a plain DROP DATABASE (no FORCE) while another session is connected (PostgreSQL waits 5 s
// for it to leave before it raises that, so these tests take seconds).
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createTestDatabase, dropDatabase } from '../../support/harness/db.js';

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

async function exists(name: string): Promise<boolean> {
  const client = await connect(inject('databaseUrl'));
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('dropDatabase', () => {
  it('retries while the database is in use (55006) and drops it once the session has gone', async () => {
    const target = await createTestDatabase(inject('databaseUrl'), { migrate: false });
    await target.db.destroy();
    const session = await connect(target.url);
    const retries: string[] = [];
    await dropDatabase(inject('databaseUrl'), target.name, {
      force: false,
      onRetry: async (error) => {
        retries.push((error as Error & { code?: string }).code ?? '');
        await session.end();
      },
    });
    expect(retries).toEqual(['55006']);
    expect(await exists(target.name)).toBe(false);
  });

  it('gives up after the given number of attempts and raises the last error', async () => {
    const target = await createTestDatabase(inject('databaseUrl'), { migrate: false });
    await target.db.destroy();
    const session = await connect(target.url);
    try {
      const retries: number[] = [];
      const attempt = dropDatabase(inject('databaseUrl'), target.name, {
        force: false,
        attempts: 2,
        onRetry: (_error, n) => {
          retries.push(n);
        },
      });
      await expect(attempt).rejects.toMatchObject({ code: '55006' });
      expect(retries).toEqual([1]);
    } finally {
      await session.end();
    }
    await dropDatabase(inject('databaseUrl'), target.name);
    expect(await exists(target.name)).toBe(false);
  });

  it('raises any other error at once, and WITH (FORCE) ends the sessions of the owner', async () => {
    const target = await createTestDatabase(inject('databaseUrl'), { migrate: false });
    await target.db.destroy();
    const wrongPassword = new URL(inject('databaseUrl'));
    wrongPassword.password = 'not-the-password';
    let retried = false;
    await expect(
      dropDatabase(wrongPassword.toString(), target.name, {
        onRetry: () => {
          retried = true;
        },
      }),
    ).rejects.toMatchObject({ code: '28P01' });
    expect(retried).toBe(false);
    const session = await connect(target.url);
    session.on('error', () => {});
    await dropDatabase(inject('databaseUrl'), target.name);
    expect(await exists(target.name)).toBe(false);
  });
});
