// How every process reaches Temporal (issue #14 §7, DESIGN.md §3): address, namespace, TLS (server CA, server name
// override), mTLS (client certificate + key) and an API key (Temporal Cloud), from the validated environment
// (infra/config/env.ts). One builder, so that the worker's NativeConnection, the gateway's and the CLI's Connection and
// the search attribute registration agree. The PEM files are read here, once at start-up: an unreadable or non-PEM
// file, or a certificate that does not match its key, is an EnvError naming the variable(s).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Env, EnvName } from '../config/env.js';
import { EnvError } from '../config/envError.js';

/** What the Temporal options are built from. */
export type TemporalEnv = Pick<
  Env,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_NAMESPACE'
  | 'TEMPORAL_API_KEY'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CA'
  | 'TEMPORAL_TLS_CERT'
  | 'TEMPORAL_TLS_KEY'
  | 'TEMPORAL_TLS_SERVER_NAME'
>;

/** TLS as both `@temporalio/client` and `@temporalio/worker` take it (their `TLSConfig`). */
export interface TemporalTls {
  serverNameOverride?: string;
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
}

/** Options both `Connection.connect` and `NativeConnection.connect` accept as they are. */
export interface TemporalConnectionOptions {
  address: string;
  /** `false`: plaintext; `{}`: TLS verified against the system's roots. */
  tls: TemporalTls | false;
  apiKey?: string;
}

export interface TemporalTarget {
  connection: TemporalConnectionOptions;
  namespace: string;
  /** For logs: the address, the namespace and how it authenticates, no secret. */
  description: string;
}

type ReadFile = (path: string) => Buffer;

function readPem(name: EnvName, path: string, readFile: ReadFile, kind: string): Buffer {
  let content: Buffer;
  try {
    content = readFile(path);
  } catch (err) {
    throw new EnvError([
      {
        names: [name],
        message: `Invalid environment: ${name}: cannot read ${JSON.stringify(path)}: ${(err as Error).message}`,
      },
    ]);
  }
  if (!content.toString('latin1').includes('-----BEGIN ')) {
    throw new EnvError([
      { names: [name], message: `Invalid environment: ${name}: expected a PEM ${kind} in ${JSON.stringify(path)}` },
    ]);
  }
  return content;
}

/** The certificate must parse, and the key must be its private key (else the server's handshake error is obscure). */
function checkPair(crt: Buffer, key: Buffer): void {
  const problem = (names: EnvName[], text: string) =>
    new EnvError([{ names, message: `Invalid environment: ${names.join(' and ')}: ${text}` }]);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(crt);
  } catch (err) {
    throw problem(['TEMPORAL_TLS_CERT'], `not a readable certificate (${(err as Error).message})`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw problem(['TEMPORAL_TLS_KEY'], `not a readable private key (${(err as Error).message})`);
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw problem(['TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY'], 'the private key does not belong to the certificate');
  }
}

/**
 * The connection options of `env`. TLS is on when TEMPORAL_TLS says so, or (unset) when a CA, a client certificate, a
 * server name or an API key is given — as the `temporal` CLI decides; TEMPORAL_TLS=false with an API key sends the key
 * in plaintext (e.g. to a local proxy that terminates TLS).
 */
export function temporalTarget(env: TemporalEnv, readFile: ReadFile = readFileSync): TemporalTarget {
  const tlsFiles = env.TEMPORAL_TLS_CA !== null || env.TEMPORAL_TLS_CERT !== null;
  const tlsOn =
    env.TEMPORAL_TLS ?? (tlsFiles || env.TEMPORAL_TLS_SERVER_NAME !== null || env.TEMPORAL_API_KEY !== null);
  let tls: TemporalTls | false = false;
  if (tlsOn) {
    tls = {};
    if (env.TEMPORAL_TLS_SERVER_NAME !== null) tls.serverNameOverride = env.TEMPORAL_TLS_SERVER_NAME;
    if (env.TEMPORAL_TLS_CA !== null) {
      tls.serverRootCACertificate = readPem('TEMPORAL_TLS_CA', env.TEMPORAL_TLS_CA, readFile, 'certificate');
    }
    if (env.TEMPORAL_TLS_CERT !== null && env.TEMPORAL_TLS_KEY !== null) {
      const crt = readPem('TEMPORAL_TLS_CERT', env.TEMPORAL_TLS_CERT, readFile, 'certificate');
      const key = readPem('TEMPORAL_TLS_KEY', env.TEMPORAL_TLS_KEY, readFile, 'private key');
      checkPair(crt, key);
      tls.clientCertPair = { crt, key };
    }
  }
  const connection: TemporalConnectionOptions = {
    address: env.TEMPORAL_ADDRESS,
    tls,
    ...(env.TEMPORAL_API_KEY !== null ? { apiKey: env.TEMPORAL_API_KEY } : {}),
  };
  const how = [
    tls === false ? 'plaintext' : 'TLS',
    ...(tls !== false && tls.serverRootCACertificate ? ['own CA'] : []),
    ...(tls !== false && tls.serverNameOverride ? [`server name ${tls.serverNameOverride}`] : []),
    ...(tls !== false && tls.clientCertPair ? ['client certificate'] : []),
    ...(connection.apiKey !== undefined ? ['API key'] : []),
  ];
  return {
    connection,
    namespace: env.TEMPORAL_NAMESPACE,
    description: `${env.TEMPORAL_ADDRESS}, namespace ${env.TEMPORAL_NAMESPACE} (${how.join(', ')})`,
  };
}

/** What a failed connection most likely means, for the TLS failures whose raw text does not say it. */
const HINTS: ReadonlyArray<{ pattern: RegExp; hint: string }> = [
  {
    pattern: /InvalidContentType|wrong version number|packet length too long|CorruptMessage/i,
    hint: 'the server does not speak TLS there: check TEMPORAL_ADDRESS, or set TEMPORAL_TLS=false',
  },
  {
    pattern: /UnknownIssuer|unable to (?:get|verify)|self[- ]signed|certificate verify failed/i,
    hint: 'the server certificate is not signed by a trusted CA: set TEMPORAL_TLS_CA to its CA',
  },
  {
    pattern: /NotValidForName|does not match|Hostname\/IP|altnames/i,
    hint: 'the server certificate is not issued for this host: set TEMPORAL_TLS_SERVER_NAME to the name it carries',
  },
  {
    pattern: /certificate required|CertificateRequired|handshake failure|bad certificate|BadCertificate/i,
    hint: 'the server wants a client certificate it trusts: set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY',
  },
];

/** Runs `connect`; a failure is rethrown naming where and how it connected, with a hint when the cause is known. */
export async function connectExplained<T>(target: TemporalTarget, connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    const hint =
      HINTS.find((h) => h.pattern.test(text))?.hint ??
      (target.connection.tls !== false && /deadline/i.test(text)
        ? 'no TLS session came up: a plaintext server (TEMPORAL_TLS=false), an untrusted or misnamed server ' +
          'certificate (TEMPORAL_TLS_CA, TEMPORAL_TLS_SERVER_NAME), a refused client certificate (TEMPORAL_TLS_CERT), ' +
          'or no server at all?'
        : null);
    throw new Error(`Cannot connect to Temporal at ${target.description}: ${text}${hint ? ` (${hint})` : ''}`, {
      cause: err,
    });
  }
}
