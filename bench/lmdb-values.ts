/**
 * LMDB value rows, run by bench/run.ts (`--only lmdb`): how each table's
 * values are best encoded, for the shapes Albedo keeps there —
 *   saved catalogues (`mcp_catalogues`, services/catalogue/store.ts,
 *     compressed): a 5,000-tool catalogue, and server-everything's catalogue
 *     saved under 20 server names;
 *   session records and ledgers (`mcp_sessions`, services/composer/records.ts):
 *     200 records of five servers each, and a ledger row per 10 records;
 *   era verdicts (`era_verdicts`, services/negotiation/era-cache.ts): 200.
 * Ways: JSON text (lmdb's `string` encoding, JSON.stringify / JSON.parse);
 * lmdb's default, msgpackr with records defined in each value; msgpackr with
 * the records' structures shared in the table (`sharedStructuresKey`); and
 * msgpackr without records (plain maps). Each round writes every row into a
 * new environment (awaited puts, as the stores do: one commit), then reads
 * every row back five times; the ways alternate, in a process of their own
 * (`node bench/lmdb-values.ts child ROUNDS`), and report medians. Size on
 * disk is the table's pages (branch, leaf, overflow) × the page size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { open } from 'lmdb';
import { catalogueCorpus } from './catalogue-corpus.ts';
import { ROOT, median, runJson, type RowSink } from './proc.ts';

const GROUP = 'LMDB values';
const SELF = path.join(ROOT, 'bench', 'lmdb-values.ts');

const WAYS = {
  json: { label: 'JSON text', opts: { encoding: 'string' }, json: true },
  msgpackr: { label: "msgpackr, lmdb's default", opts: {}, json: false },
  shared: { label: 'msgpackr, shared structures', opts: { sharedStructuresKey: Symbol.for('structures') }, json: false },
  maps: { label: 'msgpackr, no records', opts: { useRecords: false }, json: false },
} as const;
type Way = keyof typeof WAYS;

interface Shape {
  name: string;
  compression: boolean;
  values(quick: boolean): Array<[string, unknown]>;
}

const fp = (i: number): string => i.toString(16).padStart(64, '0');
const catalogueRow = (server: string, tools: unknown[]): unknown => ({
  server,
  fingerprint: fp(1),
  era: 'modern',
  protocolVersion: '2026-07-28',
  serverInfo: { name: server, version: '1.0.0' },
  capabilities: { tools: { listChanged: true }, resources: {}, prompts: {} },
  instructions: 'Use search first.',
  catalogue: { tools, resources: [], resourceTemplates: [], prompts: [] },
  savedAt: 1_760_000_000_000,
  v: 2,
});
const everything = (): unknown[] =>
  (JSON.parse(readFileSync(path.join(ROOT, 'test', 'fixtures', 'schemas', 'everything.json'), 'utf8')) as { tools: unknown[] }).tools;

const SHAPES: Shape[] = [
  {
    name: 'saved catalogue, 5,000 tools',
    compression: true,
    values: (quick) => [['big', catalogueRow('big', catalogueCorpus(quick ? 500 : 5_000))]],
  },
  {
    name: "saved catalogues, server-everything's under 20 names",
    compression: true,
    values: () =>
      Array.from({ length: 20 }, (_, i): [string, unknown] => [`everything-${i}`, catalogueRow(`everything-${i}`, everything())]),
  },
  {
    name: 'session records and ledgers, 200 sessions',
    compression: false,
    values: () =>
      Array.from({ length: 200 }, (_, i): Array<[string, unknown]> => {
        const servers = Array.from({ length: 5 }, (_, k) => `server-${k}`);
        const ids = servers.map((s) => `${s}:${fp(i * 8 + 3).slice(0, 24)}`);
        const rec: [string, unknown] = [
          `daemon\ns${i}`,
          {
            v: 1,
            owner: 'daemon',
            id: `s${i}`,
            options: { profile: 'anthropic', tools: 'auto', servers: { exclude: ['legacy'] } },
            generation: 3,
            digest: fp(i),
            shown: servers.map((server) => ({ server, catalogue: fp(i + 1), shown: fp(i + 2) })),
            connections: servers.map((s, k) => [s, { id: ids[k], fingerprint: fp(k) }]),
            savedAt: 1_760_000_000_000 + i,
          },
        ];
        return i % 10 ? [rec] : [rec, [`owner-${i}\n~ledger`, { v: 1, ids: ids.concat(ids) }]];
      }).flat(),
  },
  {
    name: 'era verdicts, 200',
    compression: false,
    values: () =>
      Array.from({ length: 200 }, (_, i): [string, unknown] => [
        fp(i),
        { era: i % 3 ? 'modern' : 'legacy', protocolVersion: i % 3 ? '2026-07-28' : '2025-06-18', at: 1_760_000_000_000 + i },
      ]),
  },
];

interface Sample {
  writeMs: number;
  readMs: number;
  kb: number;
}
type ChildResult = Record<string, Record<Way, Sample[]>>;

async function once(shape: Shape, values: Array<[string, unknown]>, way: Way): Promise<Sample> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-lmdb-'));
  const root = open({ path: dir, compression: false, maxDbs: 16 });
  try {
    const w = WAYS[way];
    const db = root.openDB<unknown, string>({ name: 'table', compression: shape.compression, ...w.opts });
    let t0 = performance.now();
    await Promise.all(values.map(([k, v]) => db.put(k, w.json ? JSON.stringify(v) : v)));
    const writeMs = performance.now() - t0;
    t0 = performance.now();
    for (let r = 0; r < 5; r++)
      for (const [k] of values)
        if (w.json) JSON.parse(db.get(k) as string);
        else db.get(k);
    const readMs = (performance.now() - t0) / 5;
    const s = db.getStats() as { treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number; pageSize: number };
    return { writeMs, readMs, kb: ((s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize) / 1024 };
  } finally {
    await root.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(rounds: number, quick: boolean): Promise<ChildResult> {
  const out: ChildResult = {};
  for (const shape of SHAPES) {
    const values = shape.values(quick);
    const per = (out[shape.name] = { json: [], msgpackr: [], shared: [], maps: [] } as Record<Way, Sample[]>);
    const ways = Object.keys(WAYS) as Way[];
    // One warm-up pass of every way, then alternating rounds (the order turns each round).
    for (const way of ways) await once(shape, values, way);
    for (let r = 0; r < rounds; r++)
      for (let i = 0; i < ways.length; i++) per[ways[(i + r) % ways.length]!].push(await once(shape, values, ways[(i + r) % ways.length]!));
  }
  return out;
}

export interface LmdbBenchContext {
  quick: boolean;
  rounds: number;
  row: RowSink;
  log(s: string): void;
}

type Metric = 'write' | 'read' | 'size';
/**
 * Per shape: the way its store uses (the Albedo column), and the rows that set it beside another way (every way is in
 * the log): a catalogue against lmdb's default, which it used before, and shared structures; records against shared
 * structures (do records pay off for them?) and JSON text; era verdicts against shared structures.
 */
const COMPARE: Record<string, { chosen: Way; rows: Array<[Way, Metric[]]> }> = {
  'saved catalogue, 5,000 tools': {
    chosen: 'json',
    rows: [
      ['msgpackr', ['write', 'read', 'size']],
      ['shared', ['write', 'read', 'size']],
    ],
  },
  "saved catalogues, server-everything's under 20 names": {
    chosen: 'json',
    rows: [
      ['msgpackr', ['write', 'read', 'size']],
      ['shared', ['read', 'size']],
    ],
  },
  'session records and ledgers, 200 sessions': {
    chosen: 'msgpackr',
    rows: [
      ['shared', ['write', 'read', 'size']],
      ['json', ['read', 'size']],
    ],
  },
  'era verdicts, 200': { chosen: 'msgpackr', rows: [['shared', ['read', 'size']]] },
};
const METRICS: Record<Metric, { what: string; unit: string; f: (s: Sample) => number }> = {
  write: { what: 'write every row', unit: 'ms', f: (s) => s.writeMs },
  read: { what: 'read every row', unit: 'ms', f: (s) => s.readMs },
  size: { what: 'size on disk', unit: 'KB', f: (s) => s.kb },
};

export async function lmdbRows(ctx: LmdbBenchContext): Promise<void> {
  const { row, log } = ctx;
  const rounds = ctx.quick ? 1 : Math.max(5, ctx.rounds * 3);
  log(`${GROUP}: ${rounds} rounds per way`);
  const res = await runJson<ChildResult>(SELF, ['child', String(rounds), ctx.quick ? 'quick' : 'full']);
  for (const shape of SHAPES) {
    const name = ctx.quick && shape.name.includes('5,000') ? shape.name.replace('5,000', '500') : shape.name;
    const per = res[shape.name]!;
    const med = (way: Way, f: (s: Sample) => number): number => median(per[way].map(f));
    const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
    for (const way of Object.keys(WAYS) as Way[]) {
      log(
        `  ${name}, ${WAYS[way].label}: write ${fmt(med(way, (s) => s.writeMs))} ms, read ${fmt(med(way, (s) => s.readMs))} ms, ` +
          `${fmt(med(way, (s) => s.kb))} KB`,
      );
    }
    const { chosen, rows } = COMPARE[shape.name]!;
    for (const [other, metrics] of rows) {
      for (const m of metrics) {
        const { what, unit, f } = METRICS[m];
        row({
          group: GROUP,
          scenario: `${name}: ${what}, ${WAYS[chosen].label}`,
          unit,
          albedo: med(chosen, f),
          peer: med(other, f),
          peerLabel: WAYS[other].label,
          better: 'lower',
        });
      }
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === 'child') {
  process.stdout.write(JSON.stringify(await measure(Number(process.argv[3]), process.argv[4] === 'quick')) + '\n');
}
