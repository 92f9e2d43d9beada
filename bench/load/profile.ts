// Where the product's CPU time goes (issue #11 "a profile of where the time goes"): reads the V8 CPU profile the
// product's process wrote (`bench:load --cpu-prof <dir>`), and prints its self time by part — PostgreSQL client,
// kysely, fastify, Temporal SDK, the LLM SDKs, the project's own rooms (engine/, infra/, workers/ …), Node itself,
// GC — and the functions with the most self time. Idle time is left out of the shares.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { int } from './stats.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The part of the system a frame belongs to, by its script. */
export function partOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)' || functionName === '(root)') return 'V8 / native (program)';
  if (url === '') return 'Node / V8 built-ins';
  if (url.startsWith('node:')) return `Node ${url.slice(5).split('/')[0]}`;
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) {
    const name = modules[1]!;
    if (name.startsWith('@temporalio/')) return 'Temporal SDK';
    if (name === 'pg' || name.startsWith('pg-') || name === 'postgres-date' || name === 'postgres-array') {
      return 'PostgreSQL client (pg)';
    }
    return name;
  }
  const path = url.startsWith('file://') ? relative(REPO_ROOT, fileURLToPath(url)) : url;
  const room = path.split('/')[0] ?? path;
  return `project ${room}/`;
}

/** The biggest profile in `dir` (the product's process; the tsx wrapper writes a small one). */
export function newestLargestProfile(dir: string): string | null {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f));
  if (files.length === 0) return null;
  return files.sort((a, b) => statSync(b).size - statSync(a).size)[0] ?? null;
}

export interface ProfileSummary {
  /** Sampled time that was not idle (ms). */
  busyMs: number;
  totalMs: number;
  parts: Array<{ part: string; ms: number }>;
  functions: Array<{ name: string; where: string; part: string; ms: number }>;
}

/** Self time per function of the samples taken after the first `skipMs` of the profile (the process's start-up). */
export function summariseProfile(profile: CpuProfile, options: { top?: number; skipMs?: number } = {}): ProfileSummary {
  const top = options.top ?? 15;
  const skipUs = (options.skipMs ?? 0) * 1000;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  let elapsedUs = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    elapsedUs += delta;
    if (elapsedUs > skipUs) selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  });
  const parts = new Map<string, number>();
  const functions = new Map<string, { name: string; where: string; part: string; us: number }>();
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') continue;
    busyUs += us;
    const part = partOf(frame);
    parts.set(part, (parts.get(part) ?? 0) + us);
    const where = frame.url
      ? `${frame.url.replace(/^.*node_modules\//, '').replace(`file://${REPO_ROOT}`, '')}:${frame.lineNumber + 1}`
      : '';
    const key = `${frame.functionName}@${where}`;
    const entry = functions.get(key) ?? { name: frame.functionName || '(anonymous)', where, part, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  return {
    busyMs: busyUs / 1000,
    totalMs: Math.max(0, (profile.endTime - profile.startTime) / 1000 - (options.skipMs ?? 0)),
    parts: [...parts].map(([part, us]) => ({ part, ms: us / 1000 })).sort((a, b) => b.ms - a.ms),
    functions: [...functions.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(({ name, where, part, us }) => ({ name, where, part, ms: us / 1000 })),
  };
}

/** Prints the summary of the product's profile in `dir`, without its first `skipMs` (start-up until `Ready.`). */
export function printProfile(dir: string, log: (line: string) => void, skipMs = 0): void {
  const file = newestLargestProfile(dir);
  if (!file) {
    log(`No CPU profile in ${dir} (the product's process did not exit cleanly).`);
    return;
  }
  const summary = summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, { skipMs });
  const share = (ms: number) => `${((100 * ms) / summary.busyMs).toFixed(1).padStart(5)} %`;
  log('');
  log(`CPU profile of the gateway + worker process, main thread (${file}), after its start-up (${int(skipMs)} ms):`);
  log(`busy ${(summary.busyMs / 1000).toFixed(1)} s of ${(summary.totalMs / 1000).toFixed(1)} s; self time by part:`);
  for (const { part, ms } of summary.parts.slice(0, 14)) log(`  ${share(ms)}  ${part}`);
  log('functions with the most self time:');
  for (const f of summary.functions) log(`  ${share(f.ms)}  ${f.name}  ${f.where}  [${f.part}]`);
}
