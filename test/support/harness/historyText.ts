// A workflow history as searchable text, every payload decoded (the claim-check tests look for message content in
// it). JSON.stringify alone would not do: a Buffer's toJSON runs before any replacer and turns payload bytes into
// arrays of numbers, so nothing written in a payload could ever be found.
import type { temporal } from '@temporalio/proto';

function decoded(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value)) return value.map(decoded);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = decoded(inner);
    return out;
  }
  return value;
}

export function historyText(history: temporal.api.history.v1.IHistory): string {
  return JSON.stringify(decoded(history));
}
