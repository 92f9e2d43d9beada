// Generates the sample conversations shipped in samples/ (used by the demo and the tests) with a fixed seed. A tool,
// outside the product build (not typechecked, linted or tested with it): the samples are data; regenerate them only
// when you mean to change them (npm run samples), then commit the new files.
//   npm run samples         writes samples/*.jsonl and prints their sizes
//   npm run samples:check   says whether the committed files are what this generator produces now
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { estimateMessagesTokensRough } from '../../engine/index.js';
import { codingSession } from './generator/codingStory.js';
import { japaneseConversation } from './generator/japanese.js';
import { Rng } from './generator/random.js';
import { attachUsage, type TranscriptLine } from './generator/usage.js';

export const SEED = 20_240_620;

export interface Sample {
  file: string;
  lines: TranscriptLine[];
}

/** Both samples, deterministically. */
export function generateSamples(): Sample[] {
  const coding = codingSession(new Rng(SEED));
  const japanese = japaneseConversation(new Rng(SEED + 1));
  return [
    {
      file: 'coding-agent.en.jsonl',
      // recorded by an agent on a 128K-window model that compacted at 75 % (96,000 tokens)
      lines: attachUsage(
        coding,
        {
          overheadTokens: 2_400,
          compactAtTokens: 96_000,
          headMessages: 2,
          tailTokens: 16_000,
          summaryTokens: 2_600,
          tokenizerRatio: 0.93,
          usageChance: 0.3,
          turnStarts: true,
        },
        new Rng(SEED + 2),
      ),
    },
    {
      file: 'long-conversation.ja.jsonl',
      // recorded on a 64K-window model that compacted at 85 % (54,400 tokens)
      lines: attachUsage(
        japanese,
        {
          overheadTokens: 300,
          compactAtTokens: 54_400,
          headMessages: 2,
          tailTokens: 9_000,
          summaryTokens: 1_800,
          tokenizerRatio: 1.04,
          usageChance: 0.3,
          turnStarts: false,
        },
        new Rng(SEED + 3),
      ),
    },
  ];
}

/** One JSON object per line: `{"message": ..., "usage": ...}` when there is usage, the bare message otherwise. */
export function toJsonl(lines: readonly TranscriptLine[]): string {
  return `${lines.map((l) => JSON.stringify(l.usage ? { message: l.message, usage: l.usage } : l.message)).join('\n')}\n`;
}

export function describeSample(sample: Sample): string {
  const messages = sample.lines.map((l) => l.message);
  const tokens = estimateMessagesTokensRough(messages);
  const roles = ['system', 'user', 'assistant', 'tool'].map(
    (r) => `${r} ${messages.filter((m) => m.role === r).length}`,
  );
  const readings = sample.lines.filter((l) => l.usage).length;
  return `${sample.file}: ${messages.length} messages (${roles.join(', ')}), ~${tokens.toLocaleString('en-US')} estimated tokens, ${readings} usage readings`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const check = process.argv.includes('--check');
  let stale = false;
  for (const sample of generateSamples()) {
    const path = fileURLToPath(new URL(`../../samples/${sample.file}`, import.meta.url));
    const content = toJsonl(sample.lines);
    if (check) {
      let committed = '';
      try {
        committed = readFileSync(path, 'utf8');
      } catch {
        // missing: stale
      }
      if (committed !== content) {
        stale = true;
        console.error(`${sample.file} differs from the generator's output: npm run samples regenerates it`);
      }
    } else {
      writeFileSync(path, content);
    }
    console.log(describeSample(sample));
  }
  if (stale) process.exitCode = 1;
}
