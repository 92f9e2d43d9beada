// `gh run view --log-failed` for the fictional repository: the job's npm ci and test output, each line prefixed
// with the job, the step and a timestamp, as GitHub Actions prints it.
import type { Rng } from './random.js';
import type { VirtualRepo } from './repo.js';
import { type RunEnv, vitestOutput } from './testRunner.js';

const NPM_CI = `npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory. Do not use it.
npm warn deprecated rimraf@3.0.2: Rimraf versions prior to v4 are no longer supported
npm warn deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported
npm warn deprecated @humanwhocodes/object-schema@2.0.3: Use @eslint/object-schema instead
npm warn deprecated @humanwhocodes/config-array@0.11.14: Use @eslint/config-array instead
npm warn deprecated eslint@8.57.0: This version is no longer supported. Please see https://eslint.org/version-support for other options.

added 312 packages, and audited 313 packages in 9s

88 packages are looking for funding
  run \`npm fund\` for details

found 0 vulnerabilities`;

export function ciFailedLog(repo: VirtualRepo, env: RunEnv, rng: Rng, runStart: Date): string {
  const job = `test (${env.node}.x, ${env.tz})`;
  let t = runStart.getTime();
  const stamp = () => {
    t += rng.int(1, 40) * 10;
    return new Date(t).toISOString().replace('Z', `${String(rng.int(0, 9999)).padStart(4, '0')}Z`);
  };
  const out: string[] = [];
  const step = (name: string, lines: string[]) => {
    for (const line of lines) out.push(`${job}\t${name}\t${stamp()} ${line}`);
  };
  step('Set up job', [
    "Current runner version: '2.317.0'",
    'Operating System',
    '  Ubuntu',
    '  22.04.4',
    '  LTS',
    'Runner Image',
    '  Image: ubuntu-22.04',
    '  Version: 20240609.1.0',
    'GITHUB_TOKEN Permissions',
    '  Contents: read',
    '  Metadata: read',
    'Prepare workflow directory',
    'Prepare all required actions',
    'Getting action download info',
    "Download action repository 'actions/checkout@v4' (SHA:692973e3d937129bcbf40652eb9f2f61becf3332)",
    "Download action repository 'actions/setup-node@v4' (SHA:60edb5dd545a775178f52524783378180af0d1f8)",
    `Complete job name: ${job}`,
  ]);
  step('Run actions/setup-node@v4', [
    `Attempting to download ${env.node}.x...`,
    `Acquiring ${env.node === 18 ? '18.20.3' : '20.14.0'} - x64 from https://github.com/actions/node-versions/releases/download/`,
    'Extracting ...',
    'Adding to the cache ...',
    `Environment details`,
    `  node: v${env.node === 18 ? '18.20.3' : '20.14.0'}`,
    '  npm: 10.7.0',
    '  yarn: 1.22.22',
    '/opt/hostedtoolcache/node/bin/npm config get cache',
    '/home/runner/.npm',
    'Cache hit for: node-cache-Linux-x64-npm-5e2b7c9d1f0a3e4b6c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b',
    'Received 35651584 of 41092371 (86.8%), 34.0 MBs/sec',
    'Received 41092371 of 41092371 (100.0%), 32.7 MBs/sec',
    'Cache Size: ~39 MB (41092371 B)',
    'Cache restored successfully',
  ]);
  step('Run npm ci', [
    '##[group]Run npm ci',
    'npm ci',
    'shell: /usr/bin/bash -e {0}',
    'env:',
    `  TZ: ${env.tz}`,
    '##[endgroup]',
    ...NPM_CI.split('\n'),
  ]);
  step('Run npm run lint', ['> ledgerline@2.3.0 lint', '> eslint . --max-warnings 0', '']);
  step('Run npm run typecheck', ['> ledgerline@2.3.0 typecheck', '> tsc --noEmit', '']);
  const { output } = vitestOutput(repo, env, rng, { viaNpm: true, clock: new Date(t).toISOString().slice(11, 19) });
  step('Run npm test', [...output.split('\n'), '##[error]Process completed with exit code 1.']);
  return out.join('\n');
}
