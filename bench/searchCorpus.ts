// Deterministic corpus and query set for bench/search.ts: agent conversations over many tenants of skewed sizes —
// English requests and answers with file paths, commands and error messages, Japanese, Chinese and some Korean
// sentences, tool calls with JSON arguments and long tool outputs.
import type { ChatMessage } from '../engine/types.js';

/** mulberry32: small, fast, deterministic. */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
/** Skewed towards the front of the list (a few words are common, most are rare). */
const pickSkewed = <T>(random: Random, items: readonly T[]): T =>
  items[Math.floor(random() ** 2.2 * items.length)] as T;
const intBetween = (random: Random, low: number, high: number) => low + Math.floor(random() * (high - low + 1));

export const ENGLISH = `the a to of and in is for on that with it this be as are was you not at by from or have an
will can but all they if we more when one there so what about which out up would do their has into other than then
some could them only time new these two may first any like now my use such make over our even most after also made
many well should before where through need back way much because each those change deploy service build test failed
error config server client request response cache queue worker session search index database migration rollback
container cluster pod node memory timeout retry latency throughput logs metrics alert incident patch release branch
commit merge review pipeline artifact dependency version upgrade schema column table query transaction lock
deadlock replica backup restore snapshot volume network socket port certificate token secret permission role tenant
user admin dashboard endpoint handler router middleware parser lexer compiler runtime thread async promise callback
function module package import export interface struct trait enum closure iterator buffer stream channel signal
process daemon scheduler cron job task batch shard partition vacuum analyze explain plan cost estimate benchmark
profile flame graph allocation leak panic stack trace overflow underflow segfault kernel driver firmware flamingo
walrus marmot capybara heron lantern quartz meridian zephyr obsidian saffron tundra`
  .split(/\s+/)
  .filter(Boolean);

const DIRS = ['src', 'lib', 'test', 'infra', 'cmd', 'pkg', 'app', 'internal', 'scripts', 'docs', 'web', 'api'];
const NAMES = `cursor config server client main index utils parser lexer router handler store cache queue worker auth
session search metrics logger migrate schema types errors retry pool stream codec`.split(/\s+/);
const EXTS = ['ts', 'rs', 'go', 'py', 'js', 'json', 'yaml', 'md', 'toml', 'sql'];
const COMMANDS = [
  'kubectl get pods -n production',
  'kubectl rollout restart deployment/web',
  'kubectl logs -f deploy/api --tail=200',
  'git commit -m "fix flaky test"',
  'git rebase -i origin/main',
  'npm run build',
  'npm test -- --watch=false',
  'cargo test --release',
  'cargo clippy -- -D warnings',
  'docker compose up -d postgres',
  'pytest -k test_search -x',
  'go test ./... -race',
  'psql -c "VACUUM ANALYZE messages"',
  'terraform plan -out=tfplan',
  'helm upgrade --install api ./chart',
];
const ERRORS = [
  'error[E0382]: borrow of moved value: `cursor`',
  "TypeError: Cannot read properties of undefined (reading 'session')",
  'Error: connect ECONNREFUSED 127.0.0.1:5432',
  'Process exited with exit code 137 (OOMKilled)',
  'panic: runtime error: index out of range [3] with length 3',
  'FATAL: password authentication failed for user "durable"',
  'ModuleNotFoundError: No module named yaml',
  'npm ERR! code ERESOLVE unable to resolve dependency tree',
  'deadlock detected while waiting for ShareLock on transaction 4711',
  'context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
];

const JA_NOUNS =
  `コンテキスト 圧縮 設定 ファイル テスト 結果 問題 原因 環境 本番 開発 検索 通信 接続 認証 記憶 要約 会話 履歴
データベース サーバー エラー ログ 処理 今日 明日 天気 性能 索引 移行 障害 監視 権限 容量 依存 関係 構成 変数 関数 型 画面`.split(
    /\s+/,
  );
const JA_VERBS = ['実行', '確認', '修正', '追加', '削除', '変更', '調査', '完了', '再起動', '最適化'];
const JA_TEMPLATES = [
  (a: string, b: string, v: string) => `${a}の${b}を${v}しました。`,
  (a: string, b: string, v: string) => `${a}が${b}で${v}できませんでした。`,
  (a: string, b: string, v: string) => `次に${a}と${b}を${v}してください。`,
  (a: string, b: string, v: string) => `${a}について${b}の${v}が必要です。`,
];
const ZH_NOUNS =
  `大别山 桂林 漓江 广西 通信 协议 压缩 上下文 配置 文件 测试 部署 服务器 数据库 错误 日志 搜索 索引 性能 问题
原因 用户 请求 代理 模型 内存 网络 缓存 队列 权限 备份 集群 节点 版本 依赖 接口`.split(/\s+/);
const ZH_VERBS = ['优化', '修复', '检查', '完成', '更新', '删除', '分析', '重启', '迁移', '验证'];
const ZH_TEMPLATES = [
  (a: string, b: string, v: string) => `我们需要${v}${a}的${b}。`,
  (a: string, b: string, v: string) => `${a}和${b}已经${v}了`,
  (a: string, b: string, v: string) => `请先${v}${a}，然后查看${b}。`,
  (a: string, b: string, v: string) => `${a}出现${b}问题，正在${v}`,
];
const KO_SENTENCES = [
  '기억이 잘 나지 않아요',
  '서버 배포를 완료했습니다',
  '설정 파일을 확인하세요',
  '안녕하세요 여러분',
];

function englishSentence(random: Random, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(pickSkewed(random, ENGLISH));
  return out.join(' ');
}

function path(random: Random): string {
  return `${pick(random, DIRS)}/${pick(random, NAMES)}.${pick(random, EXTS)}`;
}

function japanese(random: Random): string {
  return pick(random, JA_TEMPLATES)(pickSkewed(random, JA_NOUNS), pickSkewed(random, JA_NOUNS), pick(random, JA_VERBS));
}

function chinese(random: Random): string {
  return pick(random, ZH_TEMPLATES)(pickSkewed(random, ZH_NOUNS), pickSkewed(random, ZH_NOUNS), pick(random, ZH_VERBS));
}

export type Language = 'en' | 'ja' | 'zh';

export interface TenantSpec {
  id: string;
  messages: number;
  /** Share of natural-language rows written in `cjk`. */
  cjkShare: number;
  cjk: 'ja' | 'zh';
}

/** Sizes follow a Zipf-like law (exponent 1): tenant i gets ∝ 1/(i+1), at least 5 rows. */
export function tenantSpecs(random: Random, tenants: number, total: number): TenantSpec[] {
  const weights = Array.from({ length: tenants }, (_, i) => 1 / (i + 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const specs = weights.map((w, i) => ({
    id: `t${String(i).padStart(3, '0')}`,
    messages: Math.max(5, Math.round((w / sum) * total)),
    cjkShare: pick(random, [0, 0, 0.3, 0.6, 0.9]),
    cjk: pick(random, ['ja', 'zh'] as const),
  }));
  return specs;
}

function prose(random: Random, tenant: TenantSpec): string {
  if (random() < tenant.cjkShare) {
    if (random() < 0.05) return pick(random, KO_SENTENCES);
    const sentence = tenant.cjk === 'ja' ? japanese : chinese;
    const n = intBetween(random, 1, 4);
    const parts = Array.from({ length: n }, () => sentence(random));
    // Mixed-script text, as agents write it.
    if (random() < 0.3) parts.push(` ${path(random)}`);
    return parts.join('');
  }
  const n = intBetween(random, 6, 60);
  let text = englishSentence(random, n);
  if (random() < 0.4) text += ` in ${path(random)}`;
  if (random() < 0.2) text += `: ${pick(random, ERRORS)}`;
  return text;
}

function toolOutput(random: Random, tenant: TenantSpec): string {
  const lines: string[] = [];
  const n = intBetween(random, 3, 25);
  for (let i = 0; i < n; i++) {
    const r = random();
    if (r < 0.3) lines.push(`${path(random)}:${intBetween(random, 1, 900)}: ${englishSentence(random, 6)}`);
    else if (r < 0.45) lines.push(pick(random, ERRORS));
    else if (r < 0.55 && tenant.cjkShare > 0) lines.push(prose(random, tenant));
    else lines.push(`${new Date(1_700_000_000_000 + i * 1000).toISOString()} INFO ${englishSentence(random, 8)}`);
  }
  return lines.join('\n');
}

export interface CorpusRow {
  id: number;
  tenantId: string;
  sessionId: string;
  message: ChatMessage;
  /** ms since epoch. */
  timestamp: number;
  position: number;
  active: boolean;
  compacted: boolean;
}

export interface CorpusSession {
  tenantId: string;
  id: string;
  source: string;
  model: string;
  startedAt: number;
}

const SOURCES = ['cli', 'api', 'telegram', 'web'];
const BASE_TIME = Date.parse('2025-01-01T00:00:00Z');

export type CorpusItem = { kind: 'session'; session: CorpusSession } | { kind: 'row'; row: CorpusRow };

/**
 * Yields every tenant's sessions and rows, a session before its rows, rows in id order (rounds of user → tool call
 * → tool output → answer). Row flags: ~8% archived (compacted), ~3% superseded, the rest active.
 */
export function* generateCorpus(random: Random, tenants: readonly TenantSpec[]): Generator<CorpusItem> {
  let id = 0;
  let sessionNo = 0;
  for (const tenant of tenants) {
    let remaining = tenant.messages;
    while (remaining > 0) {
      const size = Math.min(remaining, intBetween(random, 8, 160));
      remaining -= size;
      const session: CorpusSession = {
        tenantId: tenant.id,
        id: `s${sessionNo++}`,
        source: pick(random, SOURCES),
        model: pick(random, ['gpt-5', 'claude-sonnet-4', 'qwen3-coder']),
        startedAt: BASE_TIME + Math.floor(random() * 300 * 86_400_000),
      };
      yield { kind: 'session', session };
      let time = session.startedAt;
      for (let position = 0; position < size; position++) {
        time += intBetween(random, 1, 90) * 1000;
        const message = roundMessage(random, tenant, position % 4, id);
        const flag = random();
        id += 1;
        yield {
          kind: 'row',
          row: {
            id,
            tenantId: tenant.id,
            sessionId: session.id,
            message,
            timestamp: time,
            position,
            active: flag >= 0.11,
            compacted: flag < 0.08,
          },
        };
      }
    }
  }
}

function roundMessage(random: Random, tenant: TenantSpec, step: number, id: number): ChatMessage {
  if (step === 0) return { role: 'user', content: prose(random, tenant) };
  if (step === 2)
    return { role: 'tool', tool_call_id: `call_${id - 1}`, name: 'shell', content: toolOutput(random, tenant) };
  if (step === 3) return { role: 'assistant', content: prose(random, tenant) };
  const command = random() < 0.5;
  return {
    role: 'assistant',
    content: random() < 0.3 ? prose(random, tenant) : null,
    tool_calls: [
      {
        id: `call_${id}`,
        type: 'function',
        function: command
          ? { name: 'shell', arguments: JSON.stringify({ cmd: pick(random, COMMANDS) }) }
          : { name: 'read_file', arguments: JSON.stringify({ path: path(random) }) },
      },
    ],
  };
}

/** indexed_text exactly as dc_indexed_text computes it (SPEC §14.2). */
export function indexedText(message: ChatMessage): string {
  const content =
    typeof message.content === 'string'
      ? message.content
      : Array.isArray(message.content)
        ? message.content
            .filter((p) => p.type === 'text')
            .map((p) => (p as { text: string }).text)
            .join(' ')
        : '';
  const toolName = message.role === 'tool' ? (message.name ?? '') : '';
  const calls = (message.tool_calls ?? []).map((c) => `${c.function.name} ${c.function.arguments}`).join(' ');
  return `${content} ${toolName} ${calls}`;
}

export type QueryPath = 'latin' | 'cjk3' | 'cjk12' | 'nohit';

export interface BenchQuery {
  path: QueryPath;
  tenantId: string;
  query: string;
}

const NO_HIT = [
  'zyxwvut',
  'qqqzzz',
  'nonexistentword',
  '鑫鑫',
  '鱻',
  '𠀀𠀁𠀂',
  'xylophonic*',
  '"flamingo zebra capybara"',
];

/** `perPath` queries for each path, on tenants chosen uniformly (CJK paths: tenants that write CJK). */
export function benchQueries(random: Random, tenants: readonly TenantSpec[], perPath: number): BenchQuery[] {
  const cjkTenants = tenants.filter((t) => t.cjkShare > 0);
  const cjkWords = (tenant: TenantSpec) =>
    tenant.cjk === 'ja' ? [...JA_NOUNS, ...JA_VERBS] : [...ZH_NOUNS, ...ZH_VERBS];
  const queries: BenchQuery[] = [];
  for (let i = 0; i < perPath; i++) {
    const tenant = pick(random, tenants);
    const r = random();
    let query: string;
    if (r < 0.5) query = pickSkewed(random, ENGLISH.slice(40));
    else if (r < 0.65) query = `${pickSkewed(random, ENGLISH.slice(60))} ${pickSkewed(random, ENGLISH.slice(60))}`;
    else if (r < 0.75) query = `${pick(random, ENGLISH.slice(100)).slice(0, 4)}*`;
    else if (r < 0.82) query = pick(random, ['"exit code"', '"index out of range"', '"borrow of moved value"']);
    else if (r < 0.9) query = `${pick(random, NAMES)}.${pick(random, EXTS)}`;
    else if (r < 0.95) query = `${pick(random, ENGLISH.slice(100))} OR ${pick(random, ENGLISH.slice(100))}`;
    else query = `${pick(random, ENGLISH.slice(60, 120))} NOT ${pick(random, ENGLISH.slice(0, 60))}`;
    queries.push({ path: 'latin', tenantId: tenant.id, query });
  }
  for (let i = 0; i < perPath; i++) {
    const tenant = pick(random, cjkTenants);
    const long = cjkWords(tenant).filter((w) => Array.from(w).length >= 3);
    const query = random() < 0.8 ? pick(random, long) : `${pick(random, long)} OR ${pick(random, long)}`;
    queries.push({ path: 'cjk3', tenantId: tenant.id, query });
  }
  for (let i = 0; i < perPath; i++) {
    const tenant = pick(random, cjkTenants);
    const words = cjkWords(tenant);
    const short = words.filter((w) => Array.from(w).length <= 2);
    let query = pick(random, short);
    if (random() < 0.15) query = Array.from(query)[0] as string;
    queries.push({ path: 'cjk12', tenantId: tenant.id, query });
  }
  for (let i = 0; i < perPath; i++) {
    queries.push({ path: 'nohit', tenantId: pick(random, tenants).id, query: pick(random, NO_HIT) });
  }
  return queries;
}
