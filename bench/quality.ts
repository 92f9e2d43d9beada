// `npm run bench:quality` (issue #15 §1): what a compaction keeps, measured on CompactBench 0.1.0's practice suite
// (deterministic cases, lexical checks, drift cycles) with one deterministic answerer for every compactor. Sets up
// its own Python venv (bench/quality/venv.ts), runs compactbench's cycle and scorer in bench/quality/driver.py and
// answers its compaction and answer requests here. Prints the table with the goals; asserts nothing.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { answer } from './quality/answerer.js';
import { type CarriedState, COMPACTORS, compact, type Turn } from './quality/compactors.js';
import { type CycleRecord, renderTable } from './quality/report.js';
import { benchSpeed } from './quality/speed.js';
import { COMPACTBENCH_VERSION, ensureCompactbench } from './quality/venv.js';

const BENCHMARKS_DIR = fileURLToPath(
  new URL(`../../shared/data/compactbench-${COMPACTBENCH_VERSION}/public`, import.meta.url),
);
const DRIVER = fileURLToPath(new URL('./quality/driver.py', import.meta.url));
const DIFFICULTIES = (process.env.BENCH_QUALITY_DIFFICULTIES ?? 'medium,elite').split(',');

interface Request {
  id: number;
  op: 'compact' | 'answer' | 'record' | 'done';
  compactor?: string;
  turns?: Turn[];
  previous?: CarriedState | null;
  prompt?: string;
}

async function runSuite(python: string): Promise<CycleRecord[]> {
  const args = [DRIVER, '--benchmarks-dir', BENCHMARKS_DIR, '--suite', 'elite_practice', '--drift-cycles', '2'];
  for (const d of DIFFICULTIES) args.push('--difficulty', d);
  for (const c of COMPACTORS) args.push('--compactor', c.key);
  const child = spawn(python, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const records: CycleRecord[] = [];
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    const request = JSON.parse(line) as Request & Partial<CycleRecord>;
    if (request.op === 'record') records.push(request as unknown as CycleRecord);
    if (request.op === 'done') break;
    if (request.op !== 'compact' && request.op !== 'answer') continue;
    let reply: { id: number; result?: unknown; error?: string };
    try {
      const result =
        request.op === 'answer'
          ? answer(request.prompt ?? '')
          : compact(request.compactor ?? '', request.turns ?? [], request.previous ?? null);
      reply = { id: request.id, result };
    } catch (err) {
      reply = { id: request.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
    }
    child.stdin.write(`${JSON.stringify(reply)}\n`);
  }
  child.stdin.end();
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`compactbench driver exited with ${code}`);
  return records;
}

async function main(): Promise<void> {
  const python = ensureCompactbench((line) => console.log(line));
  console.log(
    `CompactBench ${COMPACTBENCH_VERSION}, suite elite_practice (practice templates), difficulties ${DIFFICULTIES.join(', ')}, ` +
      '3 cases per template, 2 drift cycles; one deterministic answerer (quotes the artifact line whose statements share ' +
      'the most words with the question; role labels and questions do not count). Tokens: SPEC §3 estimate of the kept content over the transcript; the fixed lines (summary ' +
      'prefix, archive pointer) are counted apart.',
  );
  const records = await runSuite(python);
  console.log(renderTable(records, new Map(COMPACTORS.map((c) => [c.key, c.label]))));
  console.log(benchSpeed());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
