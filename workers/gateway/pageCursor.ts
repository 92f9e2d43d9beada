// Opaque page cursors of the list routes (issue #14 §6): base64url JSON of where the previous page ended, bound to
// what it pages (a list kind and its scope, e.g. a session and its ordering), so a cursor of another list or edited by
// hand is refused with 400 naming `cursor` instead of answering a wrong page.
import { HttpError } from './errors.js';

export function encodeCursor(kind: string, scope: string, key: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify({ k: kind, s: scope, ...key }), 'utf8').toString('base64url');
}

/** The key fields of `cursor`, checked against the list it must belong to and the fields' types. */
export function decodeCursor<K extends Record<string, 'string' | 'number'>>(
  cursor: string,
  kind: string,
  scope: string,
  fields: K,
): { [F in keyof K]: K[F] extends 'string' ? string : number } {
  const invalid = () => new HttpError(400, 'querystring.cursor is not a cursor of this list');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof parsed !== 'object' || parsed === null) throw invalid();
  const record = parsed as Record<string, unknown>;
  if (record.k !== kind || record.s !== scope) throw invalid();
  const out: Record<string, unknown> = {};
  for (const [name, type] of Object.entries(fields)) {
    const value = record[name];
    if (typeof value !== type || (type === 'number' && !Number.isSafeInteger(value))) throw invalid();
    out[name] = value;
  }
  return out as { [F in keyof K]: K[F] extends 'string' ? string : number };
}
