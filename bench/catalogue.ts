/**
 * Bench rows for a 5,000-tool catalogue named + normalised + bounded (issue
 * 15, item 5), run by bench/run.ts (`--only catalogue`). The catalogue is in
 * hand (bench/catalogue-corpus.ts: varied real shapes, every schema
 * distinct), so what is measured is the time beyond the wire: the schema
 * cache's pass (SchemaCache.warm) and the definitions (names, descriptions,
 * routes: catalogueDefinitions) for the `portable` profile. Three ways, each
 * in a process of its own (for its peak RSS), `node bench/catalogue.ts
 * child MODE N ROUNDS`:
 *   inline     the normaliser on the caller's thread (no worker)
 *   service    through the catalogue service worker, large batches on piscina
 *   nopool     through the catalogue service worker, piscina off
 *   pool2      as `service`, with 2 pool threads instead of the default
 * The first round of a process is reported apart (cold JIT, pool started).
 * Event-loop delay is measured on the caller's thread and on the service's
 * (perf_hooks.monitorEventLoopDelay, 1 ms resolution).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Kernel } from '../kernel/kernel.ts';
import { catalogueDefinitions, definitionSchemas, type ServerCatalogue } from '../services/catalogue/definitions.ts';
import { SchemaCache } from '../services/catalogue/schema-cache.ts';
import { normalise } from '../services/catalogue/schema/normalise.ts';
import { catalogueCorpus } from './catalogue-corpus.ts';
import { runJson, type RowSink } from './proc.ts';

// Not from bench/lib.ts: it loads the SDK client, which would count in the children's peak RSS.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const GROUP = 'catalogue';
const PROFILE = 'portable';
const SERVICE = path.join(ROOT, 'services', 'catalogue', 'service.ts');

type Mode = 'inline' | 'service' | 'nopool' | 'pool2';

interface Round {
  ms: number;
  warmMs: number;
  defsMs: number;
  callerLoopMaxMs: number;
  serviceLoopMaxMs: number | null;
  tools: number;
}
interface ChildResult {
  rounds: Round[];
  peakRssMb: number;
  pooled: number;
}

/** What run.ts hands over. */
export interface CatalogueBenchContext {
  quick: boolean;
  rounds: number;
  row: RowSink;
  log(s: string): void;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function measure(mode: Mode, n: number, rounds: number): Promise<ChildResult> {
  const entries: ServerCatalogue[] = [
    { server: 'big', catalogue: { tools: catalogueCorpus(n), resources: [], resourceTemplates: [], prompts: [] } },
  ];
  const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-catalogue-'));
  let kernel: Kernel | null = null;
  try {
    if (mode !== 'inline') {
      kernel = new Kernel();
      const pool =
        mode === 'nopool'
          ? { threshold: Number.MAX_SAFE_INTEGER, nodes: Number.MAX_SAFE_INTEGER }
          : mode === 'pool2'
            ? { maxThreads: 2 }
            : {};
      kernel.start({ name: 'catalogue', module: SERVICE, options: { storePath: path.join(home, 'store'), pool } });
      // The worker is up before the clock starts: a daemon starts it once. The pool is made by the first large batch.
      await kernel.call('catalogue', 'catalogue/profiles', {});
    }
    const k = kernel;
    const out: Round[] = [];
    for (let r = 0; r < rounds; r++) {
      // A new cache each round: every schema is normalised again.
      const cache = k
        ? new SchemaCache({
            batch: (schemas, profile) => k.call('catalogue', 'catalogue/normalise', { schemas, profile }, { timeoutMs: 300_000 }),
          })
        : new SchemaCache((s, p) => normalise(s, p as never));
      if (k) await k.call('catalogue', 'catalogue/stats', { loopDelay: 'start' });
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      // Its first tick only sets the baseline: let it tick before the work starts.
      await pause(5);
      const t0 = performance.now();
      await cache.warm(definitionSchemas(entries), PROFILE);
      const t1 = performance.now();
      const defs = catalogueDefinitions(entries, { normalise: cache.lookup, profile: PROFILE });
      const t2 = performance.now();
      // The monitor records a block when its timer fires late: let it fire after the work.
      await pause(5);
      h.disable();
      const svc = k ? await k.call('catalogue', 'catalogue/stats', { loopDelay: 'stop' }) : null;
      out.push({
        ms: t2 - t0,
        warmMs: t1 - t0,
        defsMs: t2 - t1,
        callerLoopMaxMs: h.max / 1e6,
        serviceLoopMaxMs: svc?.loopDelay?.maxMs ?? null,
        tools: defs.tools.length,
      });
    }
    const pooled = k ? (await k.call('catalogue', 'catalogue/stats', {})).pooled : 0;
    return { rounds: out, peakRssMb: process.resourceUsage().maxRSS / 1024, pooled };
  } finally {
    await kernel?.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

function child(mode: Mode, n: number, rounds: number): Promise<ChildResult> {
  return runJson<ChildResult>(path.join(ROOT, 'bench', 'catalogue.ts'), ['child', mode, String(n), String(rounds)]);
}

const later = (c: ChildResult): Round[] => (c.rounds.length > 1 ? c.rounds.slice(1) : c.rounds);
const med = (c: ChildResult, f: (r: Round) => number): number => median(later(c).map(f));
/** The largest over the later rounds: a block is a worst case, not a typical one. */
const worst = (c: ChildResult, f: (r: Round) => number): number => Math.max(...later(c).map(f));

export async function catalogueRows(ctx: CatalogueBenchContext): Promise<void> {
  const { row, log } = ctx;
  const n = ctx.quick ? 500 : 5_000;
  const rounds = ctx.quick ? 2 : 1 + Math.max(3, ctx.rounds * 2);
  const label = `${n.toLocaleString('en')}-tool catalogue named + normalised + bounded`;
  log(`catalogue: ${label}, ${rounds} rounds per process`);
  const inline = await child('inline', n, rounds);
  const service = await child('service', n, rounds);
  const nopool = await child('nopool', n, rounds);
  const pool2 = await child('pool2', n, rounds);
  for (const [name, c] of [
    ['inline', inline],
    ['service', service],
    ['nopool', nopool],
    ['pool2', pool2],
  ] as const) {
    log(
      `  ${name}: ${c.rounds
        .map(
          (r) =>
            `${r.ms.toFixed(0)} ms (warm ${r.warmMs.toFixed(0)}, defs ${r.defsMs.toFixed(0)}, caller loop ` +
            `${r.callerLoopMaxMs.toFixed(0)}, service loop ${r.serviceLoopMaxMs?.toFixed(0) ?? '—'})`,
        )
        .join('; ')}; peak RSS ${c.peakRssMb.toFixed(0)} MB`,
    );
  }
  if (service.pooled === 0 || nopool.pooled !== 0) throw new Error('the bench did not run the batches where it meant to');
  const inThread = 'in-thread, no worker';
  row({
    group: GROUP,
    scenario: `${label}: through the catalogue service + piscina (beyond wire time, p50)`,
    unit: 'ms',
    albedo: med(service, (r) => r.ms),
    peer: med(inline, (r) => r.ms),
    peerLabel: inThread,
    better: 'lower',
    target: '≤ 250 ms',
    targetAbs: 250,
  });
  row({
    group: GROUP,
    scenario: `${label}: first batch of a new process (cold; the pool starts)`,
    unit: 'ms',
    albedo: service.rounds[0]!.ms,
    peer: inline.rounds[0]!.ms,
    peerLabel: inThread,
    better: 'lower',
    target: '≤ 250 ms',
    targetAbs: 250,
  });
  row({
    group: GROUP,
    scenario: `${label}: through the catalogue service, piscina off (p50)`,
    unit: 'ms',
    albedo: med(nopool, (r) => r.ms),
    peer: med(inline, (r) => r.ms),
    peerLabel: inThread,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `${label}: piscina with 2 threads vs 1 (p50)`,
    unit: 'ms',
    albedo: med(pool2, (r) => r.ms),
    peer: med(service, (r) => r.ms),
    peerLabel: '1 pool thread',
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `${label}: service thread's event-loop max delay`,
    unit: 'ms',
    albedo: worst(service, (r) => r.serviceLoopMaxMs ?? 0),
    peer: worst(nopool, (r) => r.serviceLoopMaxMs ?? 0),
    peerLabel: 'piscina off',
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `${label}: caller thread's event-loop max delay`,
    unit: 'ms',
    albedo: worst(service, (r) => r.callerLoopMaxMs),
    peer: worst(inline, (r) => r.callerLoopMaxMs),
    peerLabel: inThread,
    better: 'lower',
  });
  // Peak RSS of one catalogue: a process that handles it once (over several rounds, garbage not yet collected would count).
  const once: ChildResult[] = [];
  for (const m of ['inline', 'service', 'nopool'] as const) once.push(await child(m, n, 1));
  const mb = (c: ChildResult): string => `${c.peakRssMb.toFixed(0)} MB`;
  log(`  peak RSS, one batch: inline ${mb(once[0]!)}, service ${mb(once[1]!)}, piscina off ${mb(once[2]!)}`);
  row({
    group: GROUP,
    scenario: `${label}: peak RSS of a process that handles it once`,
    unit: 'MB',
    albedo: once[1]!.peakRssMb,
    peer: once[0]!.peakRssMb,
    peerLabel: inThread,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `${label}: peak RSS, catalogue service with piscina vs without`,
    unit: 'MB',
    albedo: once[1]!.peakRssMb,
    peer: once[2]!.peakRssMb,
    peerLabel: 'piscina off',
    better: 'lower',
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === 'child') {
  const [, , , mode, n, rounds] = process.argv;
  const res = await measure(mode as Mode, Number(n), Number(rounds));
  process.stdout.write(JSON.stringify(res) + '\n');
}
