// Keys the operator configures (issue #14 §4): the admin key and the previous one during its rotation, the metrics key,
// the docs key. Compared in constant time whatever their lengths (SHA-256 digests of both sides), so neither a key's
// length nor its prefix leaks through timing.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** True when `given` is one of `keys` (each compared, so the time does not say which one matched). */
export function isOneOf(given: string | undefined, keys: readonly string[]): boolean {
  if (given === undefined) return false;
  const mine = digest(given);
  let match = false;
  for (const key of keys) match = timingSafeEqual(mine, digest(key)) || match;
  return match;
}

/** The token of `Authorization: Bearer <token>`, if that is what the request carries. */
export function bearerToken(request: FastifyRequest): string | undefined {
  return /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
}

/** The password of `Authorization: Basic …` (any user name): what a browser prompts for. */
function basicPassword(request: FastifyRequest): string | undefined {
  const encoded = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (encoded === undefined) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

/**
 * An onRequest hook: 401 with `WWW-Authenticate` unless the request carries `key` as a bearer token (or, with
 * `basic`, as the password of HTTP Basic authentication, so a browser can open the page).
 */
export function requireStaticKey(key: string, options: { realm: string; what: string; basic?: boolean }) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const given = bearerToken(request) ?? (options.basic ? basicPassword(request) : undefined);
    if (!isOneOf(given, [key])) {
      reply.header('www-authenticate', `${options.basic ? 'Basic' : 'Bearer'} realm="${options.realm}"`);
      throw new HttpError(401, `${options.what} key required (expected: Authorization: Bearer <${options.what} key>)`);
    }
  };
}
