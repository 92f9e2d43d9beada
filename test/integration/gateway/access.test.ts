// What the operator puts in front of the API (issue #14 §4), on the real gateway: `/docs` behind a key (bearer, or
// HTTP Basic's password so a browser can open it), and CORS for the listed origins only — off by default.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

const DOCS_KEY = 'docs-key-for-tests';
const ALLOWED = 'https://app.example.com';
let gw: GatewayHarness;

beforeAll(async () => {
  gw = await startGatewayHarness({ gateway: { docsKey: DOCS_KEY, corsOrigins: [ALLOWED, 'http://localhost:5173'] } });
});
afterAll(async () => {
  await gw?.close();
});

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('/docs behind DURABLE_CONTEXT_DOCS_KEY', () => {
  it('answers 401 without the key, the document and the UI with it (bearer or Basic password)', async () => {
    for (const path of ['/docs/json', '/docs', '/docs/static/index.html']) {
      const refused = await gw.call('GET', path, null);
      expect(refused.status, path).toBe(401);
      expect(refused.headers.get('www-authenticate'), path).toBe('Basic realm="docs"');
      expect((await gw.call('GET', path, 'wrong-key')).status, path).toBe(401);
      const viaBasic = await gw.call('GET', path, null, undefined, {
        headers: { authorization: basic('me', DOCS_KEY) },
      });
      expect(viaBasic.status, path).toBe(200);
    }
    const doc = await gw.call('GET', '/docs/json', DOCS_KEY);
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.json.paths)).toContain('/v1/tenants/{tenantId}/keys/{keyId}/rotate');
    const wrongPassword = { authorization: basic(DOCS_KEY, 'nope') };
    expect((await gw.call('GET', '/docs/json', null, undefined, { headers: wrongPassword })).status).toBe(401);
    // The docs key opens nothing else; the API and liveness are unaffected.
    expect((await gw.call('GET', '/v1/compactions', DOCS_KEY)).status).toBe(401);
    expect((await gw.call('GET', '/healthz', null)).status).toBe(200);
  });
});

describe('CORS for DURABLE_CONTEXT_CORS_ORIGINS', () => {
  const preflight = (origin: string) =>
    gw.call('OPTIONS', '/v1/conversations', null, undefined, {
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-conversation-id',
      },
    });

  it('answers a listed origin’s preflight 204 with what it asked for', async () => {
    const answer = await preflight(ALLOWED);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(answer.headers.get('access-control-allow-methods')).toContain('POST');
    expect(answer.headers.get('access-control-allow-headers')).toBe('authorization,content-type,x-conversation-id');
    expect(answer.headers.get('vary')).toContain('Origin');
    expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('gives a listed origin the header on answers and errors, with Retry-After and x-conversation-id exposed', async () => {
    const { key } = await gw.tenant();
    const ok = await gw.call('GET', '/v1/compactions', key, undefined, {
      headers: { origin: 'http://localhost:5173' },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(ok.headers.get('access-control-expose-headers')).toContain('retry-after');
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-conversation-id');
    const refused = await gw.call('GET', '/v1/compactions', 'dctx_nope', undefined, { headers: { origin: ALLOWED } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('gives any other origin, and a request without one, no CORS header', async () => {
    const other = await preflight('https://evil.example.com');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.status).not.toBe(204);
    const { key } = await gw.tenant();
    const plain = await gw.call('GET', '/v1/compactions', key);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('is off by default, and /docs is open without a docs key', async () => {
    const app = await gw.another({});
    try {
      const answer = await app.inject({
        method: 'OPTIONS',
        url: '/v1/conversations',
        headers: { origin: ALLOWED, 'access-control-request-method': 'POST' },
      });
      expect(answer.statusCode).toBe(404);
      expect(answer.headers['access-control-allow-origin']).toBeUndefined();
      expect((await app.inject({ method: 'GET', url: '/docs/json' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
