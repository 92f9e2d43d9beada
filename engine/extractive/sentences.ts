// Sentence-level classification for the extractive summariser (issue #15 §2): splitting a turn's text into
// clauses and recognising constraints and preferences (English, Japanese, Chinese), decisions, overrides of earlier
// decisions, reasons, asides and work reports. Pure and deterministic: regular expressions only, no model.

/** Sentences of a text: lines, then sentence ends (`. ! ?` followed by space, CJK `。！？` anywhere). */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    for (const piece of line.split(/(?<=[.!?])\s+|(?<=[。！？])/)) {
      const sentence = piece.replace(/^[\s>*#-]+/, '').trim();
      if (sentence.length > 0) out.push(sentence);
    }
  }
  return out;
}

/** Clauses of a sentence: split at dashes used as separators and at semicolons. */
export function splitClauses(sentence: string): string[] {
  const out: string[] = [];
  for (const piece of sentence.split(/\s[—–]\s|\s--?\s|;\s|(?<=[；])/)) {
    const clause = piece.trim();
    if (clause.length > 0) out.push(clause);
  }
  return out;
}

const CONSTRAINT_EN =
  /\b(must|mustn't|never|always|don't|do not|doesn't|does not|cannot|can't|should(?:n't| not)?|prefer(?:s|red)?|avoid|require[sd]?|required|requirement|under no circumstances|not (?:permitted|allowed)|forbidden|non-negotiable|red line|hard rule|rule (?:one|two|three|\d+)|no one|nobody|let's not|make sure|ensure|only use)\b/i;
const CONSTRAINT_CJK =
  /必ず|絶対|決して|常に|いつも|しないで|してはいけない|してはならない|禁止|ないでください|べき|好み|好ましい|避けて|必须|务必|一定要|不要|不能|不得|禁止|总是|始终|永远不要|避免|偏好|最好|千万别|别/;

export function isConstraint(sentence: string): boolean {
  return CONSTRAINT_EN.test(sentence) || CONSTRAINT_CJK.test(sentence);
}

const DECISION =
  /\b(let's|let us|we'll|we will|we're going to|we are going to|go with|going with|decided|decision|plan:|approach:|new plan|final answer|right call|use .{1,80} instead|switch(?:ing)? to|pivot(?:ing)? to|instead|chose|choose|opt(?:ed)? for)\b|決定|にします|决定|采用|改用/i;
const OVERRIDE =
  /\b(actually|instead|scratch (?:that|all|this)|revise|pivot|reset|forget|ignore (?:the|everything|that|all|earlier)|off the table|no longer|change(?:d)? (?:my|our) mind|swap|final answer|replace[sd]?)\b|やめ|取り消|撤销|改为|不再/i;
/** A clause that only drops something (names what is no longer wanted, commits to nothing). */
const DROP_ONLY = /\b(off the table|scratch|forget|ignore|no longer|drop(?:ped)?|abandon(?:ed)?|cancel(?:led)?)\b/i;
const REASON = /\b(because|since|so that|due to|the reason|in order to)\b|因为|由于|ので|ため/i;

export function isDecision(clause: string): boolean {
  return DECISION.test(clause);
}

export function isOverride(clause: string): boolean {
  return OVERRIDE.test(clause);
}

/** A clause that drops an earlier plan without committing to a new one ("Forget A and B", "X is off the table"). */
/**
 * A clause that commits to something: "let's", "we will"… anywhere; "use" and "go with" where they start the clause
 * or a part of it ("Forget Redis, use Memcached"), not inside the name of what is dropped ("The use-md5 plan").
 */
const COMMITS =
  /\b(let's|new plan|we're going to|we will|we'll)\b|(?:^|[,:]\s*|\b(?:and|then|just|instead)\s+)(?:use|go with)\b/i;

export function isDropOnly(clause: string): boolean {
  return DROP_ONLY.test(clause) && !COMMITS.test(clause);
}

export function isReason(sentence: string): boolean {
  return REASON.test(sentence);
}

const ASIDE =
  /^(?:oh,?\s+)?(?:by the way|btw|unrelated|off-topic|off topic|random(?: thought)?:?|side note|quick tangent|quick question unrelated|quick aside|anyway|ところで|余談|顺便|题外话)/i;

/** The user marks the sentence as an aside. */
export function isAside(sentence: string): boolean {
  return ASIDE.test(sentence);
}

const WORK_REPORT =
  /\b(created|wrote|written|updated|edited|fixed|ran|installed|deployed|passed|failed|added|removed|renamed|merged|committed|migrated|generated|built|refactored|tested|reverted|done)\b|完成|修复|作成|修正|実行/i;

export function isWorkReport(sentence: string): boolean {
  return WORK_REPORT.test(sentence);
}

export const ERROR_PATTERN = /\b(error|exception|traceback|failed|failure|fatal|failing)\b|エラー|错误|失败/i;
const FIX_PATTERN = /\b(fixed|resolved|passes|passed|passing|succeeded|works now|green)\b|修复|解決|成功/i;

export function isFix(text: string): boolean {
  return FIX_PATTERN.test(text);
}

/** The sentence asks (ends with a question mark): it decides nothing. */
export function isQuestion(sentence: string): boolean {
  return /[?？]$/.test(sentence);
}

export function isQuestionOrRequest(sentence: string): boolean {
  return (
    isQuestion(sentence) ||
    /^(please|can you|could you|would you|let's|add|fix|write|create|make|implement|update|remove|run|show|explain|give|tell|propose|suggest|summari[sz]e|confirm|remind|walk|list|find|check)\b/i.test(
      sentence,
    ) ||
    /してください|して下さい|请|帮我|能不能/.test(sentence)
  );
}

const STOPWORDS = new Set(
  (
    'the a an and or but if then so of to in on at for with by from as is are was were be been being it its this that ' +
    'these those i you we they he she me us our your my their them what which who whom whose when where why how do ' +
    'does did done have has had not no yes can could would should will shall may might must just also too very ' +
    'about into over than there here all any some more most other such only own same let lets let’s okay ok sure ' +
    'get got go going want like know think really well now still yet again one two out up down off'
  ).split(' '),
);

const WORD_RUN = /[\p{L}\p{N}_'’-]+/gu;
const CJK_CHAR = /[\u3040-\u30ff\u3400-\u9fff]/;
/** A quote or dash that may end a word run (trimmed), or a possessive `'s`. */
const EDGE = /['’-]/;

/** Lower-cased content tokens (length ≥ 3, stopwords removed); CJK runs as bigrams. */
export function contentTokens(text: string): string[] {
  const out: string[] = [];
  const lower = text.toLowerCase();
  // The per-word CJK test only where the text has a CJK character (issue #15 §2: ≤ 5 ms for 1,000 messages).
  const cjk = CJK_CHAR.test(lower);
  WORD_RUN.lastIndex = 0;
  for (let match = WORD_RUN.exec(lower); match !== null; match = WORD_RUN.exec(lower)) {
    const run = match[0];
    const word = EDGE.test(run) ? run.replace(/^['’-]+|['’-]+$/g, '').replace(/['’]s$/, '') : run;
    if (cjk && CJK_CHAR.test(word)) {
      for (let i = 0; i + 1 < word.length; i++) out.push(word.slice(i, i + 2));
      continue;
    }
    if (word.length >= 3 && !STOPWORDS.has(word)) out.push(word);
  }
  return out;
}
