// The one-time Codex gpt-5.5 autoraise notice (SPEC §4.5). The marker is stored by the host, per tenant.
import type { CompressionConfig } from './config.js';
import { CODEX_GPT55_AUTORAISE_PERCENT } from './constants.js';
import { codexAutoraiseApplies, formatThousands } from './modelRegistry.js';
import { configuredThresholdPercent, deriveThresholds } from './thresholds.js';

/** Tenant marker key (SPEC §16.4). */
export const CODEX_AUTORAISE_NOTICE_MARKER = 'codex_gpt55_autoraise_notice';

export interface CodexAutoraiseNoticeInput {
  model: string;
  provider?: string;
  contextLength: number;
  config: CompressionConfig;
  /** The tenant's stored marker value, or `null` when none exists. */
  storedMarker: string | null;
}

export interface CodexAutoraiseNotice {
  show: boolean;
  text?: string;
  /** The value to store under the marker after showing the notice: `<T>`. */
  markerValue?: string;
}

export function codexAutoraiseNoticeText(percent: number, window: number, thresholdTokens: number): string {
  const p = Math.round(percent * 100);
  return `Compression for gpt-5.5 on Codex now starts at ${p}% of its ${formatThousands(window)}-token window (about ${formatThousands(thresholdTokens)} tokens). To keep your configured threshold, set compression.codex_gpt55_autoraise: false. To hide this notice, set compression.codex_gpt55_autoraise_notice: false.`;
}

/** Shown only when the autoraise actually raised the percent, the notice is enabled and the marker differs. */
export function codexAutoraiseNotice(input: CodexAutoraiseNoticeInput): CodexAutoraiseNotice {
  const { model, provider, contextLength, config } = input;
  if (!config.codexGpt55AutoraiseNotice || !codexAutoraiseApplies(model, provider, config)) return { show: false };
  if (configuredThresholdPercent({ model, provider, config }) >= CODEX_GPT55_AUTORAISE_PERCENT) return { show: false };
  const { thresholdTokens } = deriveThresholds({ model, contextLength, provider, config });
  const markerValue = String(thresholdTokens);
  const stored = typeof input.storedMarker === 'string' ? input.storedMarker.replaceAll(',', '') : null;
  if (stored === markerValue) return { show: false };
  return {
    show: true,
    text: codexAutoraiseNoticeText(CODEX_GPT55_AUTORAISE_PERCENT, contextLength, thresholdTokens),
    markerValue,
  };
}
