// The event stream of a streamed turn (workers/gateway/turnStream.ts), on a scripted turn: comments keep a quiet
// stream open, a failure before `accepted` is the request's, one after it an `error` event.
import { describe, expect, it } from 'vitest';
import type { ChatTurnReply, TurnObserver } from '../../../workers/gateway/chatTurns.js';
import { HttpError } from '../../../workers/gateway/errors.js';
import { streamTurn } from '../../../workers/gateway/turnStream.js';

const answer = { reply: { role: 'assistant', content: 'done' } } as unknown as ChatTurnReply;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

describe('streamTurn', () => {
  it('writes keep-alive comments while the turn is quiet, then the reply once', async () => {
    const events = await streamTurn(
      async (observer: TurnObserver) => {
        observer.accepted();
        await sleep(80);
        return answer;
      },
      { accepted: 1, conversationId: 'c1' },
      10,
    );
    const written = await text(events);
    expect(written.startsWith('event: accepted\ndata: {"accepted":1,"conversationId":"c1"}\n\n')).toBe(true);
    expect(written.split(': keep-alive\n\n').length - 1).toBeGreaterThanOrEqual(2);
    expect(written.endsWith(`event: reply\ndata: ${JSON.stringify({ accepted: 1, ...answer })}\n\n`)).toBe(true);
    expect(written).toContain('event: delta\ndata: {"content":"done"}'); // nothing was heard: the text in one delta
  });

  it('rejects with the failure before accepted; after it, an error event with its status', async () => {
    await expect(
      streamTurn(
        async () => {
          throw new HttpError(404, 'unknown conversation');
        },
        { accepted: 1, conversationId: 'c1' },
      ),
    ).rejects.toThrow('unknown conversation');
    const events = await streamTurn(
      async (observer) => {
        observer.accepted();
        throw new HttpError(422, 'the provider refused');
      },
      { accepted: 1, conversationId: 'c1' },
    );
    expect(await text(events)).toBe(
      'event: accepted\ndata: {"accepted":1,"conversationId":"c1"}\n\n' +
        'event: error\ndata: {"status":422,"message":"the provider refused"}\n\n',
    );
  });

  it('text heard that is not the stored reply’s (a relay that lost a piece) is discarded, the reply sent whole', async () => {
    const events = await streamTurn(
      async (observer) => {
        observer.accepted();
        observer.text('do');
        return answer;
      },
      { accepted: 1, conversationId: 'c1' },
    );
    const heard = await text(events);
    expect(
      heard
        .split('\n\n')
        .filter((f) => f.startsWith('event:'))
        .map((f) => f.split('\n')[0]),
    ).toEqual(['event: accepted', 'event: delta', 'event: discard', 'event: delta', 'event: reply']);
    expect(heard).toContain('event: delta\ndata: {"content":"done"}');
    // Heard as stored: nothing more.
    const whole = await streamTurn(
      async (observer) => {
        observer.accepted();
        observer.text('do');
        observer.text('ne');
        return answer;
      },
      { accepted: 1, conversationId: 'c1' },
    );
    expect((await text(whole)).match(/event: (\w+)/g)).toEqual([
      'event: accepted',
      'event: delta',
      'event: delta',
      'event: reply',
    ]);
  });
});
