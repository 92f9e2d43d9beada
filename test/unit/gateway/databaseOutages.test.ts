// What the gateway answers when PostgreSQL fails a request (workers/gateway/errors.ts): an outage or contention that
// outlasted the retries (SPEC §13.6) is 503 with Retry-After, a statement_timeout 503 without it, never 500; data
// PostgreSQL refused is 400. A chat turn run in the gateway (workers/gateway/directTurn.ts) whose model call meets a database
// outage answers the same 503, not the 422 of a model that refused the turn for good.
import { describe, expect, it } from 'vitest';
import type { TurnRunner } from '../../../activities/turnRunner.js';
import type { ConversationRow } from '../../../infra/db/schema.js';
import { LlmFailure, LlmFailureType } from '../../../infra/llm/errors.js';
import { runDirectTurn } from '../../../workers/gateway/directTurn.js';
import { classify } from '../../../workers/gateway/errors.js';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('PostgreSQL errors, as the gateway answers them', () => {
  it.each([
    ['55P03', 'canceling statement due to lock timeout'],
    ['40001', 'could not serialize access due to concurrent update'],
    ['40P01', 'deadlock detected'],
    ['57P01', 'terminating connection due to administrator command'],
    ['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'],
  ])('%s: 503 with Retry-After', (code, message) => {
    const answer = classify(pgError(code, message));
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toBeGreaterThan(0);
    expect(answer.message).toMatch(/PostgreSQL/);
  });

  it('a statement PostgreSQL cancelled (statement_timeout) is 503 naming it, with no Retry-After to retry it on', () => {
    const answer = classify(pgError('57014', 'canceling statement due to statement timeout'));
    expect(answer).toEqual({ status: 503, message: expect.stringMatching(/statement_timeout/) });
  });

  it('refused data is 400 and an unknown error 500', () => {
    expect(classify(pgError('23514', 'new row violates check constraint')).status).toBe(400);
    expect(classify(new Error('something else')).status).toBe(500);
  });
});

describe("a gateway turn's model call", () => {
  const head = { state: null, current_session_id: 's1', model: 'acme-chat', provider: 'openai', quiet_rules: null };
  const turn = {
    tenantId: 'tenant-a',
    conversationId: 'c1',
    turnId: 'turn:1',
    head: head as unknown as ConversationRow,
    rows: [],
    readVersion: 1,
  };
  const failingWith = (error: Error) => {
    const runner = {
      call: async () => {
        throw error;
      },
      store: async () => {
        throw new Error('nothing is stored after a failed call');
      },
    };
    return runDirectTurn(runner as unknown as TurnRunner, turn, async () => undefined);
  };
  const answerOf = async (error: Error) =>
    classify(
      await failingWith(error).then(
        () => new Error('resolved'),
        (e) => e,
      ),
    );

  it('meeting a database outage answers 503 with Retry-After', async () => {
    const answer = await answerOf(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'));
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toBeGreaterThan(0);
  });

  it('refused for good by the model answers 422; a transient model failure hands the turn back', async () => {
    const details = { provider: 'openai', model: 'acme-chat', status: 400, requestId: null };
    const refused = new LlmFailure(LlmFailureType.ContextTooLong, 'context too long', details, { nonRetryable: true });
    expect((await answerOf(refused)).status).toBe(422);
    const transient = new LlmFailure(
      LlmFailureType.Unavailable,
      'overloaded',
      { ...details, status: 529 },
      { nonRetryable: false },
    );
    await expect(failingWith(transient)).resolves.toBeNull();
  });
});
