// A deterministic summarizer for crash tests: no network, the same structured summary for every request, so a
// compaction that is retried on another worker produces exactly the transcript an uninterrupted one produces.
import type { Summarizer } from '../../../engine/index.js';

export const FIXED_SUMMARY_BODY = [
  '## Goal',
  'Fix the failing tests of the project.',
  '## Progress',
  '### Done',
  '- inspected the modules and fixed their tests',
  '## Next Steps',
  '- run the whole suite',
].join('\n');

export const fixedSummarizer: Summarizer = async () => FIXED_SUMMARY_BODY;
