// Cross-origin requests (issue #14 §4): off unless the operator lists origins (`DURABLE_CONTEXT_CORS_ORIGINS`). A
// request from a listed origin gets `Access-Control-Allow-Origin` (its own origin, or `*` when `*` is listed) on every
// answer, errors included, and the headers a client reads (Retry-After, x-conversation-id, …) exposed; a preflight
// from it is answered 204 here, before routing. Keys travel in headers, never cookies: no credentials mode.
// (@fastify/cors is not installed; this is the small part of it the gateway needs.)
import type { FastifyInstance } from 'fastify';

/** Headers of our answers a browser client may read. */
const EXPOSED = [
  'retry-after',
  'x-conversation-id',
  'x-thinking-blocks-dropped',
  'x-reasoning-items-dropped',
  'www-authenticate',
].join(', ');
const METHODS = 'GET, POST, PUT, DELETE';
/** How long a browser may cache a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE_S = 600;

export function installCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const anyOrigin = origins.includes('*');
  const listed = new Set(origins);
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    void reply.header('vary', 'Origin');
    if (!anyOrigin && !listed.has(origin)) return;
    void reply.header('access-control-allow-origin', anyOrigin ? '*' : origin);
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
    if (!preflight) {
      void reply.header('access-control-expose-headers', EXPOSED);
      return;
    }
    const asked = request.headers['access-control-request-headers'];
    void reply
      .header('access-control-allow-methods', METHODS)
      .header('access-control-allow-headers', typeof asked === 'string' ? asked : 'authorization, content-type')
      .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_S));
    return reply.status(204).send();
  });
}
