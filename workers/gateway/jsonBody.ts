// The request body parser of the gateway (issue #9 §1 and §7): JSON in UTF-8 only (another charset is 415, never
// silently read as UTF-8), prototype poisoning refused (fastify's own parser), and, before any schema runs, the
// limits the store needs: at most MAX_JSON_DEPTH levels of nesting and only finite numbers (JSON.parse turns 1e400
// into Infinity, which JSON cannot even write back). Each refusal is a 400 that names where it happened.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

export const MAX_JSON_DEPTH = 64;

/** The first place where the value breaks the limits, as a path (`messages[0].message.extra.a`), or null. */
export function jsonLimitProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): string | null {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: 'body', depth: 0 }];
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop()!;
    if (typeof v === 'number' && !Number.isFinite(v)) return `${path} is a number outside the representable range`;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= maxDepth) return `${path} is nested deeper than ${maxDepth} levels`;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ value: v[i], path: `${path}[${i}]`, depth: depth + 1 });
    } else {
      for (const [key, item] of Object.entries(v)) {
        const at = /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
        stack.push({ value: item, path: at, depth: depth + 1 });
      }
    }
  }
  return null;
}

/** Replaces fastify's application/json parser with one that enforces the charset and the limits above. */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request: FastifyRequest, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(new HttpError(415, `unsupported charset '${charset}': request bodies must be JSON in UTF-8`), undefined);
      return;
    }
    parse(request, body as string, (err, value) => {
      if (err) {
        done(err, undefined);
        return;
      }
      const problem = jsonLimitProblem(value);
      done(problem ? new HttpError(400, problem) : null, problem ? undefined : value);
    });
  });
}
