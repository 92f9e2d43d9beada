// TLS and mTLS to Temporal for real (issue #14 §7). `temporal server start-dev` has no TLS flags, so the run's dev
// server is put behind a TLS-terminating TCP proxy on loopback (node:tls, ALPN h2, client certificates required and
// checked against the test CA): the bytes behind it are the server's own gRPC. The options come from the environment
// variables through infra/temporal/connectionOptions.ts, as in every entry point: the client `Connection` (gateway,
// CLI), the worker's `NativeConnection` (Rust core) and `dctx temporal setup` as a subprocess all connect through it;
// a missing client certificate, an unknown CA, a wrong server name and TLS to a plaintext server all fail.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { createServer, type Server } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseEnv } from '../../../infra/config/env.js';
import { connectExplained, type TemporalTarget, temporalTarget } from '../../../infra/temporal/connectionOptions.js';
import { runDctx } from '../../support/harness/entryPoint.js';

const TLS_DIR = fileURLToPath(new URL('../../support/fixtures/tls/', import.meta.url));
const file = (name: string) => `${TLS_DIR}${name}`;

let proxy: Server;
let proxyAddress: string;
const sockets = new Set<Socket>();

/** The environment of an mTLS deployment pointed at the proxy; `overrides` replaces (or, undefined, drops) values. */
function mtlsEnv(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    TEMPORAL_ADDRESS: proxyAddress,
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TLS_CA: file('ca.pem'),
    TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
    TEMPORAL_TLS_CERT: file('client.pem'),
    TEMPORAL_TLS_KEY: file('client.key'),
    ...overrides,
  };
}

function optionsOf(env: Record<string, string | undefined>): TemporalTarget {
  const defined = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>;
  return temporalTarget(parseEnv(defined));
}

/** A call as the gateway and the CLI make it (`Connection`), the error explained as the entry points explain it. */
async function clientCall(target: TemporalTarget): Promise<string> {
  const connection = await connectExplained(target, () =>
    Connection.connect({ ...target.connection, connectTimeout: '5 seconds' }),
  );
  try {
    const described = await connection.workflowService.describeNamespace({ namespace: inject('temporalNamespace') });
    return described.namespaceInfo?.name ?? '';
  } finally {
    await connection.close();
  }
}

/** A call as the worker makes it (`NativeConnection`, Rust core). */
async function nativeCall(target: TemporalTarget): Promise<string> {
  const connection = await connectExplained(target, () => NativeConnection.connect(target.connection));
  try {
    const described = await connection.workflowService.describeNamespace({ namespace: inject('temporalNamespace') });
    return described.namespaceInfo?.name ?? '';
  } finally {
    await connection.close();
  }
}

beforeAll(async () => {
  const [host, port] = inject('temporalAddress').split(':');
  proxy = createServer(
    {
      key: readFileSync(file('server.key')),
      cert: readFileSync(file('server.pem')),
      ca: readFileSync(file('ca.pem')),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (tlsSocket) => {
      const upstream = connect(Number(port), host);
      for (const s of [tlsSocket, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => sockets.delete(s));
      }
      tlsSocket.pipe(upstream).pipe(tlsSocket);
      tlsSocket.on('close', () => upstream.destroy());
      upstream.on('close', () => tlsSocket.destroy());
    },
  );
  proxy.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  proxyAddress = `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
});

describe('Temporal over mTLS, with the options of the environment', () => {
  it('the client Connection (gateway, CLI) reaches the server with CA, server name and client certificate', async () => {
    await expect(clientCall(optionsOf(mtlsEnv()))).resolves.toBe(inject('temporalNamespace'));
  });

  it("the worker's NativeConnection reaches it with the same options", async () => {
    await expect(nativeCall(optionsOf(mtlsEnv()))).resolves.toBe(inject('temporalNamespace'));
  });

  it('`dctx temporal setup` connects through it and, on a prepared namespace, changes nothing', async () => {
    const run = await runDctx(['temporal', 'setup'], mtlsEnv());
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `Temporal: ${proxyAddress}, namespace ${inject('temporalNamespace')} (TLS, own CA, server name temporal.test, client certificate)`,
    );
    expect(run.stdout).toContain('nothing to do: all 8 search attributes already registered');
  });

  // The worker's connection (Rust core) says which check failed; the hint names the variable to set. grpc-js (the
  // gateway's and the CLI's) only times out: its hint lists the TLS causes.
  const CLIENT_HINT = /Failed to connect before the deadline \(no TLS session came up: a plaintext server/;

  it('without the client certificate the server side refuses the session', async () => {
    const target = optionsOf(mtlsEnv({ TEMPORAL_TLS_CERT: undefined, TEMPORAL_TLS_KEY: undefined }));
    // TLS 1.3: the client may finish its handshake before the server's alert arrives, so the core reports the alert,
    // the closed connection, or — when its first request is written after the server has closed — a broken pipe.
    await expect(nativeCall(target)).rejects.toThrow(
      `Cannot connect to Temporal at ${proxyAddress}, namespace ${inject('temporalNamespace')} (TLS, own CA, server name temporal.test): `,
    );
    await expect(nativeCall(target)).rejects.toThrow(/CertificateRequired|connection closed|broken pipe/);
    await expect(clientCall(target)).rejects.toThrow(CLIENT_HINT);
  });

  it('without the CA (system roots) the server certificate is not trusted', async () => {
    const target = optionsOf(mtlsEnv({ TEMPORAL_TLS_CA: undefined }));
    await expect(nativeCall(target)).rejects.toThrow(
      /UnknownIssuer.*\(the server certificate is not signed by a trusted CA: set TEMPORAL_TLS_CA to its CA\)$/,
    );
    await expect(clientCall(target)).rejects.toThrow(CLIENT_HINT);
  });

  it('without the server name the certificate (for temporal.test) does not match 127.0.0.1', async () => {
    const target = optionsOf(mtlsEnv({ TEMPORAL_TLS_SERVER_NAME: undefined }));
    await expect(nativeCall(target)).rejects.toThrow(
      /NotValidForName.*set TEMPORAL_TLS_SERVER_NAME to the name it carries\)$/,
    );
    await expect(clientCall(target)).rejects.toThrow(CLIENT_HINT);
  });

  it('TLS to the plaintext dev server fails, naming where and how it connected', async () => {
    const target = optionsOf({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TLS: 'true' });
    await expect(nativeCall(target)).rejects.toThrow(
      `Cannot connect to Temporal at ${inject('temporalAddress')}, namespace ${inject('temporalNamespace')} (TLS): `,
    );
    await expect(nativeCall(target)).rejects.toThrow(
      /InvalidContentType.*\(the server does not speak TLS there: check TEMPORAL_ADDRESS, or set TEMPORAL_TLS=false\)$/,
    );
    await expect(clientCall(target)).rejects.toThrow(CLIENT_HINT);
  });

  it('`dctx temporal setup` with TLS to the plaintext server exits 1 with that error', async () => {
    const run = await runDctx(['temporal', 'setup'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TLS: 'on',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^error: Cannot connect to Temporal at .* \(TLS\): Failed to connect before the deadline/m,
    );
  });
});
