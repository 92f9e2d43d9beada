// The Temporal connection options every process builds from its environment (issue #14 §7): TLS on or off, server CA,
// server name override, client certificate pair, API key; unreadable, non-PEM and mismatched files named by variable.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EnvError, parseEnv } from '../../../infra/config/env.js';
import { temporalTarget } from '../../../infra/temporal/connectionOptions.js';

const TLS_DIR = fileURLToPath(new URL('../../support/fixtures/tls/', import.meta.url));
const file = (name: string) => `${TLS_DIR}${name}`;

function targetError(record: Record<string, string>): EnvError {
  try {
    temporalTarget(parseEnv(record));
  } catch (error) {
    expect(error).toBeInstanceOf(EnvError);
    return error as EnvError;
  }
  throw new Error('expected an EnvError');
}

describe('temporalTarget', () => {
  it('plaintext to the default address and namespace when nothing is set', () => {
    expect(temporalTarget(parseEnv({}))).toEqual({
      connection: { address: '127.0.0.1:7233', tls: false },
      namespace: 'default',
      description: '127.0.0.1:7233, namespace default (plaintext)',
    });
  });

  it('an API key alone turns TLS on with the system roots (Temporal Cloud)', () => {
    const target = temporalTarget(
      parseEnv({
        TEMPORAL_ADDRESS: 'eu-west-1.aws.api.temporal.io:7233',
        TEMPORAL_NAMESPACE: 'prod.acct',
        TEMPORAL_API_KEY: 'secret-key',
      }),
    );
    expect(target.connection).toEqual({ address: 'eu-west-1.aws.api.temporal.io:7233', tls: {}, apiKey: 'secret-key' });
    expect(target.namespace).toBe('prod.acct');
    expect(target.description).toBe('eu-west-1.aws.api.temporal.io:7233, namespace prod.acct (TLS, API key)');
    expect(target.description).not.toContain('secret-key');
  });

  it('TEMPORAL_TLS=false keeps an API key in plaintext; TEMPORAL_TLS=true alone is TLS with the system roots', () => {
    expect(temporalTarget(parseEnv({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).connection.tls).toBe(false);
    expect(temporalTarget(parseEnv({ TEMPORAL_TLS: 'true' })).connection).toEqual({
      address: '127.0.0.1:7233',
      tls: {},
    });
  });

  it('reads the CA, the server name and the client pair (mTLS) into the SDK shape', () => {
    const target = temporalTarget(
      parseEnv({
        TEMPORAL_ADDRESS: '127.0.0.1:7233',
        TEMPORAL_TLS_CA: file('ca.pem'),
        TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
        TEMPORAL_TLS_CERT: file('client.pem'),
        TEMPORAL_TLS_KEY: file('client.key'),
      }),
    );
    expect(target.connection).toEqual({
      address: '127.0.0.1:7233',
      tls: {
        serverNameOverride: 'temporal.test',
        serverRootCACertificate: readFileSync(file('ca.pem')),
        clientCertPair: { crt: readFileSync(file('client.pem')), key: readFileSync(file('client.key')) },
      },
    });
    expect(target.description).toBe(
      '127.0.0.1:7233, namespace default (TLS, own CA, server name temporal.test, client certificate)',
    );
  });

  it('names the variable of an unreadable file', () => {
    const error = targetError({ TEMPORAL_TLS_CA: file('missing.pem') });
    expect(error.variables).toEqual(['TEMPORAL_TLS_CA']);
    expect(error.message).toMatch(
      new RegExp(`^Invalid environment: TEMPORAL_TLS_CA: cannot read "${file('missing.pem')}": ENOENT`),
    );
  });

  it('names the variable of a file that is not PEM', () => {
    const error = targetError({ TEMPORAL_TLS_CERT: file('README.md'), TEMPORAL_TLS_KEY: file('client.key') });
    expect(error.message).toBe(
      `Invalid environment: TEMPORAL_TLS_CERT: expected a PEM certificate in "${file('README.md')}"`,
    );
  });

  it('names both variables when the key is not the certificate’s', () => {
    const error = targetError({ TEMPORAL_TLS_CERT: file('client.pem'), TEMPORAL_TLS_KEY: file('server.key') });
    expect(error.message).toBe(
      'Invalid environment: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY: the private key does not belong to the certificate',
    );
    expect(error.variables).toEqual(['TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY']);
  });

  it('names the key variable when the key file holds a certificate', () => {
    const error = targetError({ TEMPORAL_TLS_CERT: file('client.pem'), TEMPORAL_TLS_KEY: file('ca.pem') });
    expect(error.variables).toEqual(['TEMPORAL_TLS_KEY']);
    expect(error.message).toMatch(/^Invalid environment: TEMPORAL_TLS_KEY: not a readable private key/);
  });
});
