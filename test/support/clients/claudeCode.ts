// The real Claude Code CLI for the drop-in tests (issue #12: a coding agent written for Anthropic that runs offline
// against a base URL): `@anthropic-ai/claude-code`, pinned, installed into the user cache on first use (about 400 MB:
// its native binary, npmClient.ts). `.ci/run` prepares it ahead of the tests
// (`npx tsx test/support/clients/claudeCode.ts`). It talks to ANTHROPIC_BASE_URL with the key of ANTHROPIC_API_KEY,
// streaming; with recent models it sends system turns inside `messages`.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureNpmClient } from './npmClient.js';

export const CLAUDE_CODE_VERSION = '2.1.332';

/**
 * The pinned `claude` binary (installs it when missing). The package's install script puts the native binary in place
 * of a stub: a binary that does not answer with its version fails here, naming it.
 */
export function ensureClaudeCode(log: (line: string) => void = () => undefined): string {
  const bin = ensureNpmClient(
    {
      pkg: '@anthropic-ai/claude-code',
      version: CLAUDE_CODE_VERSION,
      bin: 'claude',
      dir: `claude-code-${CLAUDE_CODE_VERSION}`,
    },
    log,
  );
  const version = execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (!version.includes(CLAUDE_CODE_VERSION)) {
    throw new Error(`${bin} --version answered ${JSON.stringify(version)}, not ${CLAUDE_CODE_VERSION}`);
  }
  return bin;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(ensureClaudeCode((line) => console.log(line)));
}
