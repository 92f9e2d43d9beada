import { describe, expect, it } from 'vitest';
import { codexAutoraiseNotice } from '../../../engine/autoraiseNotice.js';
import { type CompressionConfig, normalizeCompressionConfig } from '../../../engine/config.js';

const DEFAULT_TEXT =
  'Compression for gpt-5.5 on Codex now starts at 85% of its 272,000-token window (about 231,200 tokens). To keep your configured threshold, set compression.codex_gpt55_autoraise: false. To hide this notice, set compression.codex_gpt55_autoraise_notice: false.';

function notice(config: Partial<CompressionConfig> = {}, storedMarker: string | null = null, model = 'gpt-5.5') {
  return codexAutoraiseNotice({
    model,
    provider: 'openai-codex',
    contextLength: 272000,
    config: normalizeCompressionConfig(config),
    storedMarker,
  });
}

describe('Codex gpt-5.5 autoraise notice — SPEC §4.5', () => {
  it('is shown with the exact text when no marker exists', () => {
    expect(notice()).toEqual({ show: true, text: DEFAULT_TEXT, markerValue: '231200' });
  });

  it('is not repeated while the marker holds the current threshold', () => {
    expect(notice({}, '231200')).toEqual({ show: false });
    expect(notice({}, '231,200')).toEqual({ show: false });
  });

  it('is shown again when the stored threshold differs', () => {
    expect(notice({}, '136000').show).toBe(true);
  });

  it('uses the final threshold tokens (after the absolute cap)', () => {
    const capped = notice({ thresholdTokens: 200000 });
    expect(capped.markerValue).toBe('200000');
    expect(capped.text).toContain('(about 200,000 tokens)');
  });

  it('is not shown when the notice or the autoraise is disabled', () => {
    expect(notice({ codexGpt55AutoraiseNotice: false })).toEqual({ show: false });
    expect(notice({ codexGpt55Autoraise: false })).toEqual({ show: false });
  });

  it('is not shown when the percent before the autoraise was already ≥ 0.85', () => {
    expect(notice({ threshold: 0.9 })).toEqual({ show: false });
    expect(notice({ modelThresholds: { 'gpt-5.5': 0.85 } })).toEqual({ show: false });
    expect(notice({ modelThresholds: { 'gpt-5.5': 0.84 } }).show).toBe(true);
  });

  it('is not shown for other models or providers', () => {
    expect(notice({}, null, 'gpt-5.4')).toEqual({ show: false });
    const openrouter = codexAutoraiseNotice({
      model: 'gpt-5.5',
      provider: 'openrouter',
      contextLength: 1050000,
      config: normalizeCompressionConfig(),
      storedMarker: null,
    });
    expect(openrouter).toEqual({ show: false });
  });
});
