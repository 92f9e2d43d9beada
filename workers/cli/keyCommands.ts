// `dctx keys …` (issue #14 §4, admin key): issue a key (label, scope), list a tenant's keys (never the key itself),
// revoke one (at once or later), rotate one (a new key; the old one valid for an overlap).
import { type Command, InvalidArgumentError, Option } from 'commander';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../../clients/httpClient.js';
import { KEY_SCOPES, type KeyScope, type ListedKey } from '../../contracts/http/admin.js';
import { adminConnection, type ConnectionOptions } from './options.js';

const seconds = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number of seconds`);
  return n;
};

/** One line per key: id, scope, label, created, revoked (or `active`). */
export function formatKeys(keys: readonly ListedKey[]): string {
  if (keys.length === 0) return 'No keys.';
  return keys
    .map((k) =>
      [k.id, k.scope.padEnd(4), k.createdAt, k.revokedAt ? `revoked ${k.revokedAt}` : 'active', k.label ?? ''].join(
        '  ',
      ),
    )
    .join('\n');
}

export function registerKeyCommands(
  program: Command,
  conn: (cmd: Command) => ConnectionOptions,
  out: { print: (text: string) => void; printJson: (value: unknown) => void },
): void {
  const keys = program.command('keys').description('tenant API keys (admin key)');
  keys
    .command('create <tenantId>')
    .description('issue an API key for a tenant (shown once)')
    .option('--label <label>', 'label stored with the key')
    .addOption(new Option('--scope <scope>', 'full: every route; read: GET routes and search').choices(KEY_SCOPES))
    .option('--json', 'print JSON')
    .action(async (tenantId: string, opts: { label?: string; scope?: KeyScope; json?: boolean }, cmd: Command) => {
      const { label, scope } = opts;
      const issued = await createApiKey(adminConnection(conn(cmd)), tenantId, {
        ...(label !== undefined ? { label } : {}),
        ...(scope ? { scope } : {}),
      });
      if (opts.json) return out.printJson(issued);
      out.print(issued.key);
    });
  keys
    .command('list <tenantId>')
    .description('list a tenant’s keys: id, scope, created, revoked, label (never the key)')
    .option('--json', 'print JSON')
    .action(async (tenantId: string, opts: { json?: boolean }, cmd: Command) => {
      const { keys: listed } = await listApiKeys(adminConnection(conn(cmd)), tenantId);
      if (opts.json) return out.printJson(listed);
      out.print(formatKeys(listed));
    });
  keys
    .command('revoke <tenantId> <keyId>')
    .description('revoke a key: at once, or --after seconds from now')
    .option('--after <seconds>', 'revoke this many seconds from now', seconds('--after'), 0)
    .action(async (tenantId: string, keyId: string, opts: { after: number }, cmd: Command) => {
      const revoked = await revokeApiKey(adminConnection(conn(cmd)), tenantId, keyId, opts.after);
      out.print(`key ${revoked.id} revoked at ${revoked.revokedAt}`);
    });
  keys
    .command('rotate <tenantId> <keyId>')
    .description('issue a new key with the same label and scope; the old one stops after --overlap seconds')
    .option('--overlap <seconds>', 'the old key stays valid this long', seconds('--overlap'), 0)
    .option('--json', 'print JSON')
    .action(async (tenantId: string, keyId: string, opts: { overlap: number; json?: boolean }, cmd: Command) => {
      const rotated = await rotateApiKey(adminConnection(conn(cmd)), tenantId, keyId, opts.overlap);
      if (opts.json) return out.printJson(rotated);
      out.print(`${rotated.key}\n(shown once; key ${keyId} stops at ${rotated.replacedKeyRevokedAt})`);
    });
}
