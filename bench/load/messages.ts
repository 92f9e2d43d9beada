// What the load benchmark posts: per conversation, batches of two messages — a user message and the assistant's
// reply with the provider's `usage` — of realistic sizes (user 200–1,200 characters, assistant 400–2,400: prose
// mixed with identifiers and code), deterministic per run, conversation and batch. The reported prompt grows with
// the conversation (the previous prompt + what was added), capped well below the compaction threshold; with
// `compact` it climbs past the threshold every few dozen batches and falls back afterwards, as a compaction would
// leave it (a saw-tooth), so automatic compactions run during the load.
//
// Every message starts with a tag `[bench <runId> <key>]` naming its idempotency key: the integrity check finds
// each stored message by it when it reads the transcript over HTTP.

import { createRandom } from '../searchCorpus.js';

export interface BatchItem {
  message: { role: 'user' | 'assistant'; content: string };
  idempotencyKey: string;
}

export interface Batch {
  /** 1-based batch number within its conversation. */
  n: number;
  messages: BatchItem[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  keys: string[];
}

const WORDS = (
  'the a to of and in is that for it with as on be this are was by config value result error module index ' +
  'request response handler user session token cache query table column schema migration retry timeout ' +
  'worker queue signal update batch commit rollback tenant policy summary context window budget threshold'
).split(' ');
const IDENTIFIERS = ['fetchUser()', 'src/app/routes.ts', 'SELECT id FROM', 'await db.query', '404', 'retryAfter'];

/** mulberry32, the search corpus's seedable PRNG. */
export const prng = createRandom;

/** About `chars` characters of prose with identifiers, in sentences and lines. */
export function text(random: () => number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  let sentence = 0;
  while (length < chars) {
    const word =
      random() < 0.06
        ? IDENTIFIERS[Math.floor(random() * IDENTIFIERS.length)]!
        : WORDS[Math.floor(random() * WORDS.length)]!;
    sentence += 1;
    const end = sentence > 8 && random() < 0.15;
    const piece = end ? `${word}.${random() < 0.2 ? '\n' : ' '}` : `${word} `;
    if (end) sentence = 0;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join('').trimEnd();
}

/** Rough tokens of a text as providers count English: ~4 characters a token. */
const tokensOf = (content: string) => Math.ceil(content.length / 4);

export interface ScriptOptions {
  runId: string;
  /** The conversation's automatic compaction threshold in tokens (status.thresholdTokens). */
  thresholdTokens: number;
  /** Cross the threshold periodically (compactions during the load). */
  compact: boolean;
  /** Sizes: user and assistant content, [min, max] characters. */
  userChars?: [number, number];
  assistantChars?: [number, number];
}

/** The batches of one conversation, in order. */
export class ConversationScript {
  private readonly random: () => number;
  private n = 0;
  private prompt: number;
  private readonly cap: number;
  private lastCompletion = 0;

  constructor(
    readonly conversationId: string,
    seed: number,
    private readonly options: ScriptOptions,
  ) {
    this.random = prng(seed);
    // A system prompt and tool definitions before the first exchange.
    this.prompt = 1_500 + Math.floor(this.random() * 1_500);
    this.cap = Math.floor(options.thresholdTokens * 0.4);
  }

  /** The reading a batch reports: growing, capped (or the saw-tooth of `compact`). */
  private reading(added: number): number {
    if (!this.options.compact) {
      this.prompt = Math.min(this.cap, this.prompt + added);
      return this.prompt;
    }
    const threshold = this.options.thresholdTokens;
    // Past the threshold the next reading is what a compaction leaves (~30 %); until then it climbs ~3 % a batch.
    if (this.prompt >= threshold) this.prompt = Math.floor(threshold * 0.3);
    else this.prompt = Math.min(Math.floor(threshold * 1.02), this.prompt + added + Math.floor(threshold * 0.03));
    return this.prompt;
  }

  size(range: [number, number]): number {
    return range[0] + Math.floor(this.random() * (range[1] - range[0]));
  }

  next(): Batch {
    this.n += 1;
    const base = `${this.options.runId}:${this.conversationId}:${this.n}`;
    const keys = [`${base}:u`, `${base}:a`];
    const tag = (key: string) => `[bench ${key}] `;
    const user = tag(keys[0]!) + text(this.random, this.size(this.options.userChars ?? [200, 1_200]));
    const assistant = tag(keys[1]!) + text(this.random, this.size(this.options.assistantChars ?? [400, 2_400]));
    // The request that produced this reply carried the previous prompt, the previous reply and this user message.
    const promptTokens = this.reading(this.lastCompletion + tokensOf(user));
    const completion = tokensOf(assistant);
    this.lastCompletion = completion;
    return {
      n: this.n,
      messages: [
        { message: { role: 'user', content: user }, idempotencyKey: keys[0]! },
        { message: { role: 'assistant', content: assistant }, idempotencyKey: keys[1]! },
      ],
      usage: { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion },
      keys,
    };
  }
}

/** The tag of a stored message's content, or null. */
export function tagOf(content: unknown): string | null {
  if (typeof content !== 'string') return null;
  const match = /^\[bench (\S+)\] /.exec(content);
  return match ? match[1]! : null;
}
