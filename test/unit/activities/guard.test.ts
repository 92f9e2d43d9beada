// The activity guard (activities/guard.ts) heartbeats activity tasks, and never local activities: the server knows no
// heartbeat of a local activity and refuses every one (the worker logs `Activity heartbeat failed … UnknownActivity`).
import { asyncLocalStorage, Context, type Info } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { guardActivities } from '../../../activities/guard.js';

/** Runs `fn` as an activity of the given kind would run, counting its heartbeats. */
async function runAs(isLocal: boolean, fn: () => Promise<unknown>): Promise<number> {
  let beats = 0;
  const context = new Context(
    { isLocal, activityType: 'recordState', attempt: 1 } as Info,
    new Promise<never>(() => undefined),
    new AbortController().signal,
    () => {
      beats += 1;
    },
    undefined,
    console as never,
    undefined as never,
    undefined as never,
  );
  await asyncLocalStorage.run(context, fn);
  return beats;
}

describe('guardActivities', () => {
  const slow = guardActivities(
    { wait: () => new Promise<void>((resolve) => setTimeout(resolve, 70)) },
    { heartbeatIntervalMs: 20 },
  );

  it('heartbeats an activity task at once and then every interval while it runs', async () => {
    expect(await runAs(false, () => slow.wait())).toBeGreaterThanOrEqual(3);
  });

  it('never heartbeats a local activity', async () => {
    expect(await runAs(true, () => slow.wait())).toBe(0);
  });
});
