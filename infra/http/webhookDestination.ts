// Where a webhook may be sent (issue #14 §2): never into the network the gateway and the workers sit in. A tenant's
// URL is resolved and refused when any address it names is loopback, private (RFC 1918, fc00::/7), link-local
// (169.254/16 — the cloud metadata address among them — fe80::/10), shared (100.64/10), unspecified or multicast:
// otherwise a tenant could make the worker POST to internal services and read their answers' status codes from the
// delivery records. Checked when the endpoint is registered and again before every delivery (a name can resolve
// elsewhere later). An operator whose receivers live on such networks turns it off
// (`DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE`); the tests do, for their loopback receivers.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** Whether an address is one a webhook may not reach (an IPv4-mapped IPv6 address counts as its IPv4 one). */
export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return BLOCKED.check(mapped[1], 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address: refused
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Why a webhook may not go to `url` (a message naming the address), or null when it may. */
export async function webhookDestinationProblem(
  url: string,
  options: { allowPrivate: boolean },
): Promise<string | null> {
  if (options.allowPrivate) return null;
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return 'is not a URL';
  }
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `names a host that does not resolve (${host})`;
  }
  const internal = addresses.find(isInternalAddress);
  return internal === undefined
    ? null
    : `resolves to ${internal}, a loopback, private or link-local address (an operator may allow such ` +
        'destinations with DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE=1)';
}
