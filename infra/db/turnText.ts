// The text of a chat turn the workflow runs, relayed to the gateway that streams it (issue #12: `stream: true` on
// the messages route). The model call runs in a worker process (the respond activity); it publishes the text as the
// provider writes it with PostgreSQL's NOTIFY on a channel of the turn's own, and the gateway holding the client's
// stream LISTENs on it. Nothing is stored: a notification reaches the sessions listening when it is sent, and the
// stored reply stays what the stream ends with (the gateway checks the text it relayed against it). Each piece
// carries the activity's attempt and its sequence number within it: a retry starts over, and pieces sent from
// different pooled connections are put back in order.
import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

/** One piece of a turn's text. */
export interface TurnTextPiece {
  /** The activity attempt that called the model (1, 2, …): a higher one starts the text over. */
  attempt: number;
  /** 0, 1, … within the attempt. */
  seq: number;
  text: string;
}

/** A NOTIFY payload must stay below 8,000 bytes: at most this many UTF-16 units of text (≤ 6 bytes each in JSON). */
export const MAX_PIECE_CHARS = 1_000;
/** How long the publisher gathers deltas into one notification. */
export const PIECE_GATHER_MS = 20;

/** The turn's channel: a name PostgreSQL keeps whole (at most 63 bytes), whatever the turn id. */
export function turnTextChannel(turnId: string): string {
  return `dc_turn_${createHash('sha256').update(turnId).digest('hex').slice(0, 40)}`;
}

/** Sends the text of one attempt of a turn, in order, gathered into few notifications. Never throws. */
export class TurnTextPublisher {
  private buffer = '';
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();
  private readonly channel: string;

  constructor(
    private readonly db: Kysely<Database>,
    turnId: string,
    private readonly attempt: number,
  ) {
    this.channel = turnTextChannel(turnId);
  }

  push(delta: string): void {
    this.buffer += delta;
    if (this.buffer.length >= MAX_PIECE_CHARS) this.flush();
    else if (!this.timer) this.timer = setTimeout(() => this.flush(), PIECE_GATHER_MS);
  }

  /** Sends what is gathered; resolves once everything pushed was sent (or failed: relaying is best effort). */
  async close(): Promise<void> {
    this.flush();
    await this.sending;
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.buffer !== '') {
      const text = this.buffer.slice(0, MAX_PIECE_CHARS);
      this.buffer = this.buffer.slice(text.length);
      const payload = JSON.stringify({ attempt: this.attempt, seq: this.seq++, text } satisfies TurnTextPiece);
      // One after the other: each is delivered when its statement ends, so the listener hears them in order.
      this.sending = this.sending.then(() =>
        sql`SELECT pg_notify(${this.channel}, ${payload})`.execute(this.db).then(
          () => undefined,
          () => undefined,
        ),
      );
    }
  }
}

type Listener = (piece: TurnTextPiece) => void;

/**
 * The gateway's side: one connection that LISTENs on the channels of the turns it streams. A connection that
 * breaks is opened again at the next subscription (a stream that loses pieces meanwhile still ends with the reply).
 */
export class TurnTextListener {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(private readonly connectionString: string) {}

  /** Listens for the turn's pieces until the returned function is called. */
  async subscribe(turnId: string, listener: Listener): Promise<() => Promise<void>> {
    const channel = turnTextChannel(turnId);
    const set = this.listeners.get(channel) ?? new Set<Listener>();
    this.listeners.set(channel, set);
    set.add(listener);
    const unsubscribe = async () => {
      set.delete(listener);
      if (set.size > 0 || this.listeners.get(channel) !== set) return;
      this.listeners.delete(channel);
      await this.client?.query(`UNLISTEN ${channel}`).catch(() => undefined);
    };
    if (set.size === 1) {
      try {
        await (await this.connection()).query(`LISTEN ${channel}`);
      } catch (err) {
        await unsubscribe();
        throw err;
      }
    }
    return unsubscribe;
  }

  async close(): Promise<void> {
    const client = this.client ?? (await this.connecting?.catch(() => null)) ?? null;
    this.client = null;
    this.listeners.clear();
    await client?.end().catch(() => undefined);
  }

  private connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.connectionString, application_name: 'dc-turn-text' });
      client.on('notification', (message) => this.dispatch(message.channel, message.payload));
      client.on('error', () => {
        if (this.client === client) this.client = null;
      });
      client.on('end', () => {
        if (this.client === client) this.client = null;
      });
      try {
        await client.connect();
        // The channels of the turns streamed while the connection was down.
        for (const channel of this.listeners.keys()) await client.query(`LISTEN ${channel}`);
        this.client = client;
        return client;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  private dispatch(channel: string, payload: string | undefined): void {
    const set = this.listeners.get(channel);
    if (!set || payload === undefined) return;
    let piece: TurnTextPiece;
    try {
      piece = JSON.parse(payload) as TurnTextPiece;
    } catch {
      return;
    }
    for (const listener of set) listener(piece);
  }
}

/**
 * Puts one turn's pieces back in order and says when an attempt started over: `text` with each next piece of the
 * latest attempt, `restart` when a later attempt's first piece arrives after text of an earlier one was given.
 */
export function orderedPieces(handlers: { text(text: string): void; restart(): void }): Listener {
  let attempt = 0;
  let next = 0;
  let given = false;
  let early = new Map<number, string>();
  return (piece) => {
    if (piece.attempt < attempt) return;
    if (piece.attempt > attempt) {
      if (given) handlers.restart();
      attempt = piece.attempt;
      next = 0;
      given = false;
      early = new Map();
    }
    early.set(piece.seq, piece.text);
    for (let text = early.get(next); text !== undefined; text = early.get(next)) {
      early.delete(next);
      next += 1;
      given = true;
      handlers.text(text);
    }
  };
}
