// Where a webhook may be sent (infra/http/webhookDestination.ts, issue #14 §2): never into the operator's networks —
// loopback, private, link-local (the cloud metadata address), shared, unspecified, multicast; IPv4-mapped IPv6 as
// its IPv4 address — unless the operator allows it.
import { describe, expect, it } from 'vitest';
import { isInternalAddress, webhookDestinationProblem } from '../../../infra/http/webhookDestination.js';

describe('isInternalAddress', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.9',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    'not-an-address',
  ])('refuses %s', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each(['93.184.216.34', '172.32.0.1', '8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8'])(
    'allows %s',
    (address) => {
      expect(isInternalAddress(address)).toBe(false);
    },
  );
});

describe('webhookDestinationProblem', () => {
  it('names the address an IP-literal URL points to; nothing when allowed or public', async () => {
    expect(await webhookDestinationProblem('http://127.0.0.1:8080/x', { allowPrivate: false })).toMatch(
      /^resolves to 127\.0\.0\.1, a loopback, private or link-local address/,
    );
    expect(await webhookDestinationProblem('http://[::1]/x', { allowPrivate: false })).toMatch(/^resolves to ::1/);
    expect(await webhookDestinationProblem('http://169.254.169.254/latest', { allowPrivate: false })).not.toBeNull();
    expect(await webhookDestinationProblem('http://127.0.0.1:8080/x', { allowPrivate: true })).toBeNull();
    expect(await webhookDestinationProblem('https://93.184.216.34/hook', { allowPrivate: false })).toBeNull();
  });

  it('resolves names: localhost is loopback', async () => {
    expect(await webhookDestinationProblem('http://localhost:9/x', { allowPrivate: false })).toMatch(/^resolves to /);
  });
});
