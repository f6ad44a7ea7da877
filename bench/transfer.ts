/**
 * Normaliser transfer rows, run by bench/run.ts (`--only transfer`): how a
 * large `catalogue/normalise` batch should cross to the piscina pool and
 * back. Today each chunk (500 schemas) is a structured clone each way
 * (services/catalogue/normalise-task.ts); the candidate is one msgpackr
 * buffer per chunk, transferred (moved, not copied) each way
 * (bench/normalise-packed-task.ts). Both run the same driver, chunk size and
 * pool size as services/catalogue/normalise-pool.ts, over the same schemas
 * (bench/catalogue-corpus.ts), each in a process of its own
 * (`node bench/transfer.ts child MODE N ROUNDS`), alternating. Reported: the
 * batch's wall time; how long the calling thread (the catalogue service's, in
 * the daemon) is busy with it (event-loop utilisation) and its longest block
 * (perf_hooks.monitorEventLoopDelay); the peak RSS of a process that sends
 * the batch once. The first round of a process (pool start, cold JIT) is
 * left out of the medians.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Packr } from 'msgpackr';
import { Piscina } from 'piscina';
import { POOL_CHUNK, POOL_IDLE_MS, defaultThreads } from '../services/catalogue/normalise-pool.ts';
import type { NormaliseTask, NormaliseTaskResult } from '../services/catalogue/normalise-task.ts';
import type { NormaliseResult } from '../services/catalogue/schema/normalise.ts';
import { catalogueCorpus } from './catalogue-corpus.ts';
import type { PackedTask } from './normalise-packed-task.ts';
import { ROOT, median, runJson, type RowSink } from './proc.ts';

const GROUP = 'normaliser transfer';
const PROFILE = 'portable';
const SELF = path.join(ROOT, 'bench', 'transfer.ts');

type Mode = 'clone' | 'msgpackr';

interface Round {
  ms: number;
  busyMs: number;
  maxBlockMs: number;
}
interface ChildResult {
  rounds: Round[];
  peakRssMb: number;
  /** SHA-256 of the answers: both ways must answer the same. */
  digest: string;
  bytesPerBatch: number;
}

export interface TransferBenchContext {
  quick: boolean;
  rounds: number;
  row: RowSink;
  log(s: string): void;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function measure(mode: Mode, n: number, rounds: number): Promise<ChildResult> {
  const schemas = catalogueCorpus(n).map((t) => t.inputSchema as unknown);
  const task = mode === 'clone' ? '../services/catalogue/normalise-task.ts' : './normalise-packed-task.ts';
  const pool = new Piscina({
    filename: new URL(task, import.meta.url).href,
    minThreads: 0,
    maxThreads: defaultThreads(),
    idleTimeout: POOL_IDLE_MS,
  });
  const packr = new Packr();
  let bytes = 0;
  const chunk = async (c: unknown[]): Promise<NormaliseResult[]> => {
    if (mode === 'clone')
      return ((await pool.run({ schemas: c, profile: PROFILE } satisfies NormaliseTask)) as NormaliseTaskResult).results;
    // A copy of its own: pack() answers a view of the Packr's buffer, which the next pack reuses.
    const packed = new Uint8Array(packr.pack(c));
    bytes += packed.byteLength;
    const out = (await pool.run({ packed, profile: PROFILE } satisfies PackedTask, { transferList: [packed.buffer] })) as Uint8Array;
    bytes += out.byteLength;
    return packr.unpack(out) as NormaliseResult[];
  };
  const out: Round[] = [];
  let last: NormaliseResult[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      bytes = 0;
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      // Its first tick only sets the baseline.
      await pause(5);
      const elu0 = performance.eventLoopUtilization();
      const t0 = performance.now();
      const chunks: unknown[][] = [];
      for (let i = 0; i < schemas.length; i += POOL_CHUNK) chunks.push(schemas.slice(i, i + POOL_CHUNK));
      last = (await Promise.all(chunks.map(chunk))).flat();
      const ms = performance.now() - t0;
      const elu = performance.eventLoopUtilization(elu0);
      // A block that just ended is recorded when the monitor's timer fires late: let it fire.
      await pause(5);
      h.disable();
      out.push({ ms, busyMs: elu.active, maxBlockMs: h.max / 1e6 });
    }
  } finally {
    await pool.destroy();
  }
  const digest = createHash('sha256').update(JSON.stringify(last)).digest('hex');
  return { rounds: out, peakRssMb: process.resourceUsage().maxRSS / 1024, digest, bytesPerBatch: bytes };
}

const child = (mode: Mode, n: number, rounds: number): Promise<ChildResult> =>
  runJson<ChildResult>(SELF, ['child', mode, String(n), String(rounds)]);

export async function transferRows(ctx: TransferBenchContext): Promise<void> {
  const { row, log } = ctx;
  const n = ctx.quick ? 1_000 : 5_000;
  const rounds = ctx.quick ? 2 : 6;
  const repeats = ctx.quick ? 1 : Math.max(2, ctx.rounds);
  const label = `${n.toLocaleString('en')}-schema batch to the piscina normaliser and back`;
  const peerLabel = 'msgpackr buffers, transferred';
  log(`${GROUP}: ${label}, structured clone vs msgpackr, ${repeats} × ${rounds} rounds per way`);
  const rs: Record<Mode, Round[]> = { clone: [], msgpackr: [] };
  const digests = new Set<string>();
  let packedMb = 0;
  for (let i = 0; i < repeats; i++) {
    for (const mode of i % 2 ? (['msgpackr', 'clone'] as const) : (['clone', 'msgpackr'] as const)) {
      const c = await child(mode, n, rounds);
      rs[mode].push(...(c.rounds.length > 1 ? c.rounds.slice(1) : c.rounds));
      digests.add(c.digest);
      if (mode === 'msgpackr') packedMb = c.bytesPerBatch / 2 ** 20;
    }
  }
  if (digests.size !== 1) throw new Error('the two ways answered differently: the comparison would be meaningless');
  const fmt = (xs: Round[], f: (r: Round) => number): string => xs.map((r) => f(r).toFixed(0)).join(', ');
  for (const mode of ['clone', 'msgpackr'] as const) {
    log(`  ${mode}: ms ${fmt(rs[mode], (r) => r.ms)}; busy ${fmt(rs[mode], (r) => r.busyMs)}; block ${fmt(rs[mode], (r) => r.maxBlockMs)}`);
  }
  log(`  msgpackr: ${packedMb.toFixed(1)} MB packed per batch (schemas out + answers back)`);
  const med = (m: Mode, f: (r: Round) => number): number => median(rs[m].map(f));
  const pair = (scenario: string, unit: string, f: (r: Round) => number): void =>
    row({
      group: GROUP,
      scenario: `${label}: ${scenario}`,
      unit,
      albedo: med('clone', f),
      peer: med('msgpackr', f),
      peerLabel,
      better: 'lower',
    });
  pair('wall time', 'ms', (r) => r.ms);
  pair("calling thread's busy time", 'ms', (r) => r.busyMs);
  pair("calling thread's longest block", 'ms', (r) => r.maxBlockMs);
  // Peak RSS of one batch: a process that sends it once (over several rounds, garbage not yet collected would count).
  const once = { clone: [] as number[], msgpackr: [] as number[] };
  for (let i = 0; i < repeats; i++) for (const mode of ['clone', 'msgpackr'] as const) once[mode].push((await child(mode, n, 1)).peakRssMb);
  const mbs = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ');
  log(`  peak RSS, one batch: clone ${mbs(once.clone)} MB; msgpackr ${mbs(once.msgpackr)} MB`);
  row({
    group: GROUP,
    scenario: `${label}: peak RSS of a process that sends it once`,
    unit: 'MB',
    albedo: median(once.clone),
    peer: median(once.msgpackr),
    peerLabel,
    better: 'lower',
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === 'child') {
  const [, , , mode, n, rounds] = process.argv;
  process.stdout.write(JSON.stringify(await measure(mode as Mode, Number(n), Number(rounds))) + '\n');
}
