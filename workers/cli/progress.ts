// Progress of `dctx import`: a progress bar on a terminal, otherwise one line per tenth of the messages sent.
import cliProgress from 'cli-progress';
import type { ImportProgress } from '../../clients/importTranscript.js';

export function progressReporter(
  file: string,
  print: (line: string) => void,
): { update: (p: ImportProgress) => void; stop: () => void } {
  if (process.stdout.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `Importing ${file} |{bar}| {value}/{total} messages · batch {batch}/{batches}{state}`,
        stream: process.stdout,
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      update: (p) => {
        const payload = {
          batch: p.sentBatches,
          batches: p.totalBatches,
          state: p.waiting ? ' · waiting for processing…' : '',
        };
        if (!started) {
          bar.start(p.totalMessages, p.sentMessages, payload);
          started = true;
        } else bar.update(p.sentMessages, payload);
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  let lastDecile = -1;
  return {
    update: (p) => {
      if (p.waiting) {
        print(
          `waiting for the conversation to process the import (${p.totalMessages - p.sentMessages} last messages sent)`,
        );
        return;
      }
      const decile = p.totalMessages ? Math.floor((p.sentMessages / p.totalMessages) * 10) : 10;
      if (decile === lastDecile) return;
      lastDecile = decile;
      print(`sent ${p.sentMessages}/${p.totalMessages} messages (batch ${p.sentBatches}/${p.totalBatches})`);
    },
    stop: () => undefined,
  };
}
