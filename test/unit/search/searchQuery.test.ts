// Query sanitising and parsing (SPEC §14.3) and routing (SPEC §14.4).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cjkGramsOf,
  containsCjk,
  cutQuery,
  escapeLike,
  MAX_QUERY_CHARS,
  type ParsedQuery,
  parseSearchQuery,
  positiveTerms,
  routeQuery,
} from '../../../engine/search/query.js';

/** A compact rendering: groups joined by ` OR `, clauses by ` AND `; phrase "…", prefix …*, negation -. */
function render(parsed: ParsedQuery | null): string | null {
  if (!parsed) return null;
  return parsed.groups
    .map((group) =>
      group
        .map(({ term, negated }) => {
          const body = term.phrase ? `"${term.text}"` : term.text;
          return `${negated ? '-' : ''}${body}${term.prefix ? '*' : ''}`;
        })
        .join(' AND '),
    )
    .join(' OR ');
}

const show = (query: unknown) => render(parseSearchQuery(query));

describe('SPEC §14.3 table', () => {
  it.each([
    ['hello AND', 'hello'],
    ['OR world', 'world'],
    ['deploy*', 'deploy*'],
    ['"exact phrase"', '"exact phrase"'],
    ['chat-send', '"chat-send"'],
    ['my-app.config.ts', '"my-app.config.ts"'],
    ['TODO: fix', 'TODO AND fix'],
    ['(foo', 'foo'],
    ['广西 OR 桂林 OR 漓江', '广西 OR 桂林 OR 漓江'],
    ['100%完成', '100%完成'],
  ])('%s → %s', (query, expected) => {
    expect(show(query)).toBe(expected);
  });

  it.each(['***', '""', '"   "'])('%s → [] (no terms)', (query) => {
    expect(parseSearchQuery(query)).toBeNull();
  });

  it('deploy* is a prefix term on deploy', () => {
    expect(parseSearchQuery('deploy*')?.groups).toEqual([
      [{ term: { text: 'deploy', phrase: false, prefix: true }, negated: false }],
    ]);
  });

  it('the three OR-ed CJK terms are three groups', () => {
    const parsed = parseSearchQuery('广西 OR 桂林 OR 漓江');
    expect(parsed?.path).toBe('cjk');
    expect(parsed?.groups.map((g) => g.map((c) => c.term.text))).toEqual([['广西'], ['桂林'], ['漓江']]);
  });
});

describe('step 1: non-string, blank, length cap', () => {
  it.each([undefined, null, 42, {}, ['a'], '', '   ', '\n\t', '\u3000'])('%j → []', (query) => {
    expect(parseSearchQuery(query)).toBeNull();
  });

  it('keeps the first 2,048 characters (code points)', () => {
    const long = `${'a '.repeat(1023)}bc${'z'.repeat(5000)}`;
    const parsed = parseSearchQuery(long);
    const terms = positiveTerms(parsed as ParsedQuery);
    expect(terms).toHaveLength(1024);
    expect(terms.at(-1)?.text).toBe('bc');
  });

  it('cuts by code points, never inside a surrogate pair', () => {
    const astral = '𠀀'.repeat(3000); // U+20000, CJK extension B: two UTF-16 units each
    const cut = cutQuery(astral);
    expect(Array.from(cut)).toHaveLength(MAX_QUERY_CHARS);
    expect(cut).toBe('𠀀'.repeat(MAX_QUERY_CHARS));
  });

  it('a 10,000-character query parses quickly', () => {
    const query = 'deploy OR "kube ctl" NOT x* '.repeat(400);
    const started = performance.now();
    const parsed = parseSearchQuery(query);
    expect(performance.now() - started).toBeLessThan(200);
    expect(parsed).not.toBeNull();
  });
});

describe('step 2: phrases', () => {
  it('a phrase between quotes is one term, whitespace collapsed', () => {
    expect(show('"  exact \t  phrase  "')).toBe('"exact phrase"');
  });
  it('phrases and words keep their order', () => {
    expect(show('foo "bar baz" qux')).toBe('foo AND "bar baz" AND qux');
    expect(show('foo"bar baz"qux')).toBe('foo AND "bar baz" AND qux');
  });
  it('an unmatched quote is removed', () => {
    expect(show('"unterminated phrase')).toBe('unterminated AND phrase');
    expect(show('"a b" "c')).toBe('"a b" AND c');
  });
  it('special characters inside a phrase become spaces', () => {
    expect(show('"foo: (bar)"')).toBe('"foo bar"');
  });
  it('an operator inside a phrase is text', () => {
    expect(show('"AND"')).toBe('"AND"');
    expect(show('"black OR white"')).toBe('"black OR white"');
  });
  it('a trailing star on a phrase is a prefix on its last word', () => {
    expect(parseSearchQuery('"deploy the serv*"')?.groups[0]?.[0]?.term).toEqual({
      text: 'deploy the serv',
      phrase: true,
      prefix: true,
    });
  });
  it('an empty phrase is dropped', () => {
    expect(show('foo "" bar')).toBe('foo AND bar');
    expect(show('"(  )"')).toBeNull();
  });
});

describe('step 3: special characters', () => {
  it('every listed character becomes a space', () => {
    const specials = "+{}()[]<>:^@/#&|~,;!?$='`\\";
    for (const char of specials) {
      expect(show(`alpha${char}beta`), char).toBe('alpha AND beta');
    }
  });
  it('keeps . - _ and *', () => {
    expect(show('a.b')).toBe('"a.b"');
    expect(show('a-b')).toBe('"a-b"');
    expect(show('a_b')).toBe('"a_b"');
    expect(show('ab*')).toBe('ab*');
  });
  it('% becomes a space unless next to a CJK character', () => {
    expect(show('100%done')).toBe('100 AND done');
    expect(show('100%完成')).toBe('100%完成');
    expect(show('完成%100')).toBe('完成%100');
    expect(show('%')).toBeNull();
    expect(show('50% 完成')).toBe('50 AND 完成');
  });
  it('other characters are kept as part of words', () => {
    expect(show('café')).toBe('café');
    expect(show('€100')).toBe('€100');
  });
});

describe('step 5: stars', () => {
  it.each([
    ['deploy**', 'deploy*'],
    ['*deploy', 'deploy'],
    ['de*ploy', 'deploy'],
    ['de*pl*oy*', 'deploy*'],
    ['* foo', 'foo'],
    ['foo ** bar', 'foo AND bar'],
  ])('%s → %s', (query, expected) => {
    expect(show(query)).toBe(expected);
  });
});

describe('step 6: operators', () => {
  it.each([
    ['a AND b', 'a AND b'],
    ['a b', 'a AND b'],
    ['a OR b', 'a OR b'],
    ['a NOT b', 'a AND -b'],
    ['NOT a', 'a'],
    ['a NOT', 'a'],
    ['AND OR NOT a OR', 'a'],
    ['a AND OR b', 'a OR b'],
    ['a OR AND b', 'a AND b'],
    ['a OR NOT b', 'a AND -b'],
    ['a NOT OR b', 'a OR b'],
    ['a and b', 'a AND and AND b'],
    ['cats or dogs', 'cats AND or AND dogs'],
    ['not this', 'not AND this'],
    ['And Or', 'And AND Or'],
    ['AND', null],
    ['AND OR NOT', null],
    ['AND*', 'AND*'],
  ])('%s → %s', (query, expected) => {
    expect(show(query)).toBe(expected);
  });

  it('precedence: NOT, then AND, then OR', () => {
    expect(show('a b NOT c OR d')).toBe('a AND b AND -c OR d');
    expect(show('a OR b c NOT d e')).toBe('a OR b AND c AND -d AND e');
    expect(show('a NOT b NOT c')).toBe('a AND -b AND -c');
  });

  it('every group starts with a positive term', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('AND', 'OR', 'NOT', 'x', 'y*', '"p q"', '-', '***', '(', 'z.w'), { maxLength: 12 }),
        (words) => {
          const parsed = parseSearchQuery(words.join(' '));
          if (!parsed) return;
          for (const group of parsed.groups) {
            expect(group.length).toBeGreaterThan(0);
            expect(group[0]?.negated).toBe(false);
          }
        },
      ),
    );
  });
});

describe('step 7: compound terms', () => {
  it.each([
    ['my-app.config.ts', '"my-app.config.ts"'],
    ['chat-send', '"chat-send"'],
    ['-foo', 'foo'],
    ['foo.', 'foo'],
    ['__init__', 'init'],
    ['__init__.py', '"init__.py"'],
    ['...', null],
    ['- foo -', 'foo'],
    ['foo.* bar', 'foo* AND bar'],
    ['my-app*', '"my-app"*'],
    ['foo AND ...', 'foo'],
    ['... OR bar', 'bar'],
    ['src/cursor.rs', 'src AND "cursor.rs"'],
  ])('%s → %s', (query, expected) => {
    expect(show(query)).toBe(expected);
  });
});

describe('never throws', () => {
  it('on any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (query) => {
        const parsed = parseSearchQuery(query);
        if (parsed) {
          for (const term of positiveTerms(parsed)) expect(term.text.length).toBeGreaterThan(0);
        }
      }),
    );
  });
});

describe('SPEC §14.4 routing', () => {
  it.each(['こんにちは', 'カタカナ', '안녕하세요', '기억', '大别山', 'Agent通信', '㐀', '𠀀', '「引用」', '。'])(
    '%s takes the CJK path',
    (text) => {
      expect(containsCjk(text)).toBe(true);
      expect(routeQuery(text)).toBe('cjk');
    },
  );
  it.each(['hello', 'café', 'Straße', 'Привет', 'مرحبا', '１２３', '😀'])('%s takes the Latin path', (text) => {
    expect(routeQuery(text)).toBe('latin');
  });
  it('range edges', () => {
    const edges: Array<[number, boolean]> = [
      [0x4dff, false],
      [0x4e00, true],
      [0x9fff, true],
      [0xa000, false],
      [0x33ff, false],
      [0x3400, true],
      [0x4dbf, true],
      [0x1ffff, false],
      [0x20000, true],
      [0x2a6df, true],
      [0x2a6e0, false],
      [0x2fff, false],
      [0x3000, true],
      [0x30ff, true],
      [0x3100, false],
      [0xabff, false],
      [0xac00, true],
      [0xd7af, true],
      [0xd7b0, false],
    ];
    for (const [cp, cjk] of edges)
      expect(routeQuery(String.fromCodePoint(cp)), cp.toString(16)).toBe(cjk ? 'cjk' : 'latin');
  });
  it('a query with any CJK character takes the CJK path as a whole', () => {
    expect(parseSearchQuery('hello 世界')?.path).toBe('cjk');
    expect(parseSearchQuery('hello world')?.path).toBe('latin');
  });
});

describe('helpers', () => {
  it('escapeLike escapes backslash, percent and underscore', () => {
    expect(escapeLike('100%完成')).toBe('100\\%完成');
    expect(escapeLike('a_b\\c')).toBe('a\\_b\\\\c');
  });
  it('cjkGramsOf: bigrams of each CJK run, unigrams of one-character runs', () => {
    expect(cjkGramsOf('圧縮')).toEqual(['圧縮']);
    expect(cjkGramsOf('大别山')).toEqual(['大别', '别山']);
    expect(cjkGramsOf('桂')).toEqual(['桂']);
    expect(cjkGramsOf('Agent通信')).toEqual(['通信']);
    expect(cjkGramsOf('100%完成')).toEqual(['完成']);
    expect(cjkGramsOf('a完b成c')).toEqual(['完', '成']);
    expect(cjkGramsOf('hello')).toEqual([]);
    expect(cjkGramsOf('𠀀𠀁')).toEqual(['𠀀𠀁']);
  });
});
