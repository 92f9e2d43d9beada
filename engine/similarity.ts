// How alike two summary bodies are (the host's fixed-point detector, SPEC §19): the Dice coefficient of their word
// bigram multisets after normalisation (case folded, digits kept, punctuation and whitespace runs collapsed), so
// reordered headings or a changed count weigh little and a new sentence weighs in proportion. Pure, linear.

/** Lower-cased words (letters and digits of any script; CJK characters count one word each). */
function words(text: string): string[] {
  const out: string[] = [];
  for (const match of text
    .toLowerCase()
    .matchAll(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]+/gu)) {
    out.push(match[0]);
  }
  return out;
}

function bigrams(text: string): Map<string, number> {
  const list = words(text);
  const grams = new Map<string, number>();
  if (list.length === 1) grams.set(list[0] as string, 1);
  for (let i = 0; i + 1 < list.length; i++) {
    const gram = `${list[i]} ${list[i + 1]}`;
    grams.set(gram, (grams.get(gram) ?? 0) + 1);
  }
  return grams;
}

/** 1 for texts with the same normalised word sequence, 0 for texts sharing no word pair; symmetric. */
export function summarySimilarity(a: string, b: string): number {
  const left = bigrams(a);
  const right = bigrams(b);
  let total = 0;
  for (const n of left.values()) total += n;
  for (const n of right.values()) total += n;
  if (total === 0) return 1;
  let shared = 0;
  for (const [gram, n] of left) shared += Math.min(n, right.get(gram) ?? 0);
  return (2 * shared) / total;
}
