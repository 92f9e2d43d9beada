// The item lists of an extractive summary (issue #15 §2): each item once, in order, compared without case and
// spacing; and the same list kept unlisted until it is asked for, for the sections the budget may drop whole
// (budget.ts), so that a window whose summary keeps none of them never builds them.
import { collapseWhitespace, cutWithSuffix } from '../text.js';

const ITEM_LIMIT = 400;

const item = (text: string): string => cutWithSuffix(collapseWhitespace(text), ITEM_LIMIT);

/**
 * Consecutive sentences joined into as few items as keep each within the item limit, in order (a sentence longer
 * than the limit is an item of its own, cut like any item).
 */
export function packSentences(sentences: readonly string[]): string[] {
  const out: string[] = [];
  let current = '';
  for (const raw of sentences) {
    const sentence = collapseWhitespace(raw);
    if (sentence.length === 0) continue;
    if (current.length > 0 && current.length + 1 + sentence.length <= ITEM_LIMIT) {
      current = `${current} ${sentence}`;
    } else {
      if (current.length > 0) out.push(current);
      current = sentence;
    }
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Items in order, each once (compared without case and spacing). */
export class ItemList {
  readonly items: string[] = [];
  private readonly seen = new Set<string>();
  constructor(initial: readonly string[] = []) {
    for (const i of initial) this.push(i);
  }
  push(text: string): void {
    const value = item(text);
    const key = value.toLowerCase();
    if (value.length === 0 || this.seen.has(key)) return;
    this.seen.add(key);
    this.items.push(value);
  }
  has(text: string): boolean {
    return this.seen.has(item(text).toLowerCase());
  }
}

/** An ItemList whose pushes (and a pure test of each, `keep`) happen when its items are first asked for. */
export class DeferredItemList {
  private readonly pending: { text: string; keep: ((text: string) => boolean) | null }[] = [];
  private list: ItemList | null = null;
  constructor(private readonly initial: readonly string[] = []) {}
  push(text: string, keep: ((text: string) => boolean) | null = null): void {
    if (this.list) throw new Error('DeferredItemList: pushed after it was listed');
    this.pending.push({ text, keep });
  }
  items(): string[] {
    if (!this.list) {
      this.list = new ItemList(this.initial);
      for (const { text, keep } of this.pending) if (!keep || keep(text)) this.list.push(text);
    }
    return this.list.items;
  }
}
