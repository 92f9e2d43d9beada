// Request bodies put together from JSON kept per message (openaiMessages.ts, anthropicBody.ts): a chat turn's body is
// mostly the transcript, whose messages are the same objects from one turn to the next while the gateway keeps it
// (workers/gateway/transcriptCache.ts) and never change after they are made (the engine never mutates a message: a
// cache marker or a tool stub is a copy). So each message is serialised once while it lives, not on every turn: that
// was the largest single cost of a chat turn in the gateway (issue #11, `bench:load --chat`: 13 % of its main
// thread, plus measuring and encoding the string again in fetch). The bytes are exactly those of `JSON.stringify`.
// Keeping a message's JSON costs more than serialising it once (1,000 messages of 1 KB: 5.3 ms all new, 0.3 ms all
// kept, 3.3 ms for JSON.stringify of the whole body), so only calls on kept messages do it (chat.ts `keepJson`).

/** A message's JSON, kept by message object for as long as that object lives. */
export class JsonByObject<K extends object> {
  private readonly kept = new WeakMap<K, Buffer>();

  constructor(private readonly toWire: (key: K) => unknown) {}

  get(key: K): Buffer {
    let json = this.kept.get(key);
    if (json === undefined) {
      json = utf8(JSON.stringify(this.toWire(key)));
      this.kept.set(key, json);
    }
    return json;
  }
}

/** UTF-8, not from Node's shared 8 KB pool: a slice kept as long as a message would keep its whole slab. */
function utf8(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/** The type of a body the SDKs send as given (bytes): theirs to be told. */
export const JSON_BODY = { 'content-type': 'application/json' };

/** `JSON.stringify(value)` in UTF-8: a body serialised whole (messages that are not kept between calls). */
export const jsonBytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

const [OPEN, COMMA, CLOSE] = ['[', ',', ']'].map((text) => Buffer.from(text)) as [Buffer, Buffer, Buffer];

/** The bytes of `[` the entries `]`. */
export function jsonArray(entries: readonly Buffer[], into: Buffer[] = []): Buffer[] {
  into.push(OPEN);
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) into.push(COMMA);
    into.push(entries[i] as Buffer);
  }
  into.push(CLOSE);
  return into;
}

/**
 * The bytes of `JSON.stringify({ ...head, [key]: array, ...tail })` where `array` is the JSON array of `entries`
 * (each an element's JSON); no key of `tail` is `key` or one of `head`'s.
 */
export function objectWithArray(
  head: Readonly<Record<string, unknown>>,
  key: string,
  entries: readonly Buffer[],
  tail: Readonly<Record<string, unknown>>,
): Buffer {
  const open = JSON.stringify(head);
  const pieces = [Buffer.from(`${open === '{}' ? '{' : `${open.slice(0, -1)},`}${JSON.stringify(key)}:`)];
  jsonArray(entries, pieces);
  const close = JSON.stringify(tail);
  pieces.push(Buffer.from(close === '{}' ? '}' : `,${close.slice(1)}`));
  return Buffer.concat(pieces);
}
