// Snippets (SPEC §14.7): the CJK formula on code points, and the Latin 40-word excerpt.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SearchTerm } from '../../../engine/search/query.js';
import { cjkSnippet, latinSnippet } from '../../../engine/search/snippet.js';

const term = (text: string, prefix = false): SearchTerm => ({ text, phrase: false, prefix });

describe('cjkSnippet', () => {
  it('the §14.7 example', () => {
    expect(cjkSnippet('我们去大别山旅游', [term('大别山')])).toBe('我们去>>>大别山<<<旅游');
  });

  it('start = max(0, pos - 40), end = min(L, max(start + 120, pos + len)), ... on cut sides', () => {
    const text = `${'a'.repeat(100)}大别山${'b'.repeat(200)}`;
    // pos 100, start 60, end max(180, 103) = 180
    expect(cjkSnippet(text, [term('大别山')])).toBe(`...${'a'.repeat(40)}>>>大别山<<<${'b'.repeat(77)}...`);
  });

  it('a match near the start keeps 120 characters from the start', () => {
    const text = `x大别山${'y'.repeat(300)}`;
    expect(cjkSnippet(text, [term('大别山')])).toBe(`x>>>大别山<<<${'y'.repeat(116)}...`);
  });

  it('a match longer than the window extends the end to the end of the match', () => {
    const long = '長'.repeat(150);
    const text = `${'z'.repeat(50)}${long}${'z'.repeat(10)}`;
    expect(cjkSnippet(text, [term(long)])).toBe(`...${'z'.repeat(40)}>>>${long}<<<...`);
  });

  it('counts code points, not UTF-16 units (extension B)', () => {
    const text = `${'𠀀'.repeat(50)}目標${'𠀁'.repeat(5)}`;
    expect(cjkSnippet(text, [term('目標')])).toBe(`...${'𠀀'.repeat(40)}>>>目標<<<${'𠀁'.repeat(5)}`);
  });

  it('case-insensitive, original casing kept', () => {
    expect(cjkSnippet('Agent通信协议', [term('agent通信')])).toBe('>>>Agent通信<<<协议');
  });

  it('the first positive term (in query order) that occurs', () => {
    expect(cjkSnippet('桂林山水 广西', [term('漓江'), term('广西'), term('桂林')])).toBe('桂林山水 >>>广西<<<');
  });

  it('no term occurs: the first 120 characters, ... when longer', () => {
    expect(cjkSnippet('短い', [term('无')])).toBe('短い');
    expect(cjkSnippet('字'.repeat(130), [term('无')])).toBe(`${'字'.repeat(120)}...`);
  });

  /** §14.7 word for word, on arrays of code points, each lower-cased when it stays one code point. */
  function specSnippet(text: string, terms: readonly SearchTerm[]): string {
    const fold = (c: string) => (Array.from(c.toLowerCase()).length === 1 ? c.toLowerCase() : c);
    const chars = Array.from(text);
    const folded = chars.map(fold);
    const L = chars.length;
    for (const t of terms) {
      const needle = Array.from(t.text).map(fold);
      let pos = -1;
      for (let i = 0; needle.length > 0 && i + needle.length <= L && pos === -1; i++) {
        if (needle.every((c, j) => folded[i + j] === c)) pos = i;
      }
      if (pos === -1) continue;
      const len = needle.length;
      const start = Math.max(0, pos - 40);
      const end = Math.min(L, Math.max(start + 120, pos + len));
      const cut = (a: number, b: number) => chars.slice(a, b).join('');
      return `${start > 0 ? '...' : ''}${cut(start, pos)}>>>${cut(pos, pos + len)}<<<${cut(pos + len, end)}${end < L ? '...' : ''}`;
    }
    return L > 120 ? `${chars.slice(0, 120).join('')}...` : text;
  }

  it('equals the §14.7 formula on any text: CJK, cased letters, astral and lone surrogates', () => {
    const alphabet = [
      '圧',
      '縮',
      '大',
      '别',
      '山',
      'カ',
      '기',
      '𠀀',
      '𠀁',
      'a',
      'A',
      'İ',
      'ß',
      'Σ',
      ' ',
      '\ud800',
      '\udc00',
    ];
    const piece = fc.constantFrom(...alphabet);
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 300 }),
        fc.array(fc.array(piece, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
        fc.nat(),
        (textPieces, termPieces, cut) => {
          const text = textPieces.join('');
          // Terms taken from the text now and then, so that most of them occur.
          const from = cut % Math.max(1, textPieces.length);
          const terms = termPieces.map((p, i) =>
            term(i === 0 && textPieces.length > 0 ? textPieces.slice(from, from + p.length).join('') : p.join('')),
          );
          expect(cjkSnippet(text, terms)).toBe(specSnippet(text, terms));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('latinSnippet', () => {
  it('wraps every matched word, keeping its casing; whole short text without ...', () => {
    expect(latinSnippet('Deploy the service, then deploy again', [term('deploy')])).toBe(
      '>>>Deploy<<< the service, then >>>deploy<<< again',
    );
  });

  it('prefix terms wrap words starting with the prefix', () => {
    expect(latinSnippet('deployment deployed redeploy', [term('deploy', true)])).toBe(
      '>>>deployment<<< >>>deployed<<< redeploy',
    );
  });

  it('phrase and compound terms wrap their words', () => {
    const terms: SearchTerm[] = [{ text: 'cursor.rs', phrase: true, prefix: false }];
    expect(latinSnippet('panic in src/cursor.rs at line 42', terms)).toBe(
      'panic in src/>>>cursor<<<.>>>rs<<< at line 42',
    );
  });

  it('at most 40 words around the best match, ... on the cut sides', () => {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`);
    words[120] = 'needle';
    const snippet = latinSnippet(words.join(' '), [term('needle')]);
    expect(snippet.startsWith('...')).toBe(true);
    expect(snippet.endsWith('...')).toBe(true);
    const inner = snippet.slice(3, -3).split(' ');
    expect(inner).toHaveLength(40);
    expect(inner).toContain('>>>needle<<<');
    expect(inner[0]).toBe('w101'); // 19 words before the match, 20 after
  });

  it('prefers the window with the most distinct query words', () => {
    const words = Array.from({ length: 300 }, (_, i) => `w${i}`);
    words[10] = 'alpha';
    words[200] = 'alpha';
    words[205] = 'beta';
    const snippet = latinSnippet(words.join(' '), [term('alpha'), term('beta')]);
    expect(snippet).toContain('>>>alpha<<<');
    expect(snippet).toContain('>>>beta<<<');
    expect(snippet).not.toContain('w10 ');
  });

  it('a match at the start keeps the text start (no leading ...)', () => {
    const text = `needle ${Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ')}`;
    const snippet = latinSnippet(text, [term('needle')]);
    expect(snippet.startsWith('>>>needle<<< w0')).toBe(true);
    expect(snippet.endsWith('w38...')).toBe(true);
  });
});
