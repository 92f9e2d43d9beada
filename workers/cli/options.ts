// The command line's own input (pure): the connection a command needs (tenant or admin key, from the option or the
// environment), the parsers of option values, and CliError for a usage mistake (printed as is, exit code 1).
import { InvalidArgumentError } from 'commander';
import type { GatewayConnection } from '../../clients/httpClient.js';

/** A usage error of the CLI itself (missing key, bad option value): printed as is, exit code 1. */
export class CliError extends Error {}

/** The gateway URL and the keys, each from its option or else its environment variable. */
export interface ConnectionOptions {
  url: string;
  key?: string | null;
  adminKey?: string | null;
}

export function tenantConnection(opts: ConnectionOptions): GatewayConnection {
  if (!opts.key) {
    throw new CliError(
      'missing tenant API key: pass --key <key> or set DCTX_KEY (issue one with `dctx keys create <tenantId>`)',
    );
  }
  return { url: opts.url, key: opts.key };
}

export function adminConnection(opts: ConnectionOptions): GatewayConnection {
  if (!opts.adminKey) {
    throw new CliError('missing admin key: pass --admin-key <key> or set DURABLE_CONTEXT_ADMIN_KEY');
  }
  return { url: opts.url, key: opts.adminKey };
}

export function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a positive integer`);
    return n;
  };
}

export const commaList = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function listOf(name: string, allowed: readonly string[]) {
  return (value: string): string[] => {
    const items = commaList(value);
    const bad = items.filter((s) => !allowed.includes(s));
    if (bad.length || items.length === 0) {
      throw new InvalidArgumentError(`${name} must be a comma-separated list of ${allowed.join(', ')}`);
    }
    return items;
  };
}

export function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new InvalidArgumentError(`not valid JSON (${(err as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidArgumentError('must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
