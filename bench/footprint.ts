/**
 * Memory and large-payload rows, run by bench/run.ts (`--only memory`,
 * `--only large`), each client in processes of its own (bench/child.ts):
 * the marginal cost of a stdio connection between two counts, each point
 * after GC in every isolate; a 16 MiB tool result end to end and its peak
 * RSS; a 5,000-tool catalogue listed in full, beside the wire's own time.
 */
import path from 'node:path';
import { median } from './lib.ts';
import { ROOT, runJson, type RowSink } from './proc.ts';

export interface FootprintBenchContext {
  P: { memSpan: number[]; memRepeats: number };
  /** The compiled raw echo server (lib.ts writeRawEchoJs). */
  rawEchoJs: string;
  row: RowSink;
  log(s: string): void;
}

/** Runs `bench/child.ts ARGS` (with --expose-gc) and resolves with the numbers it prints. */
export const benchChild = (args: string[]): Promise<Record<string, number>> =>
  runJson<Record<string, number>>(path.join(ROOT, 'bench', 'child.ts'), args, ['--expose-gc']);

export async function memoryRows(ctx: FootprintBenchContext): Promise<void> {
  const { P, rawEchoJs, row, log } = ctx;
  const [lo, hi] = P.memSpan as [number, number];
  log(`memory: marginal per connection, ${lo} → ${hi} connections`);
  const a: Record<string, number>[] = [];
  const b: Record<string, number>[] = [];
  // Each measurement in fresh processes, alternating; the median of them (one process's GC state is one sample).
  for (let r = 0; r < P.memRepeats; r++) {
    a.push(await benchChild(['memory', 'albedo', String(lo), String(hi), rawEchoJs]));
    b.push(await benchChild(['memory', 'sdk', String(lo), String(hi), rawEchoJs]));
  }
  const med = (xs: Record<string, number>[], f: (x: Record<string, number>) => number): number => median(xs.map(f));
  const proc = med(a, (x) => x.perConnMb!);
  const withLaunchers = med(a, (x) => x.perConnMb! + x.launcherPerConnMb!);
  const peer = med(b, (x) => x.perConnMb!);
  const list = (xs: Record<string, number>[], f: (x: Record<string, number>) => number): string =>
    xs.map((x) => f(x).toFixed(3)).join(', ');
  log(
    `  samples (MB per connection): Albedo ${list(a, (x) => x.perConnMb!)} (+ launchers ${list(a, (x) => x.launcherPerConnMb!)}); ` +
      `peer ${list(b, (x) => x.perConnMb!)}`,
  );
  // Below zero is GC noise, not a saving: say so where the run is read, not only in the table's missing ratio.
  if (proc <= 0 || peer <= 0) log(`  WARNING: a marginal at or below zero is a broken measurement (${JSON.stringify({ a, b })})`);
  const span = `${lo} → ${hi} stdio connections, after GC`;
  row({ group: 'memory', scenario: `${span}: marginal process RSS per connection`, unit: 'MB', albedo: proc, peer, better: 'lower' });
  row({
    group: 'memory',
    scenario: `${span}: marginal per connection with Albedo's launchers (PSS)`,
    unit: 'MB',
    albedo: withLaunchers,
    peer,
    better: 'lower',
    target: '≤ 2 MB',
    targetAbs: 2,
  });
  const heaps = a.map((x) => x.workerHeapPerConnMb).filter((x): x is number => x !== undefined);
  if (heaps.length) {
    row({
      group: 'memory',
      scenario: `${span}: of which the transport workers' heaps (Albedo)`,
      unit: 'MB',
      albedo: median(heaps),
      peer: null,
      better: 'lower',
    });
  }
}

export async function largeRows(ctx: Omit<FootprintBenchContext, 'P' | 'rawEchoJs'>): Promise<void> {
  const { row, log } = ctx;
  const group = 'large payloads';
  log('large payloads');
  const a = await benchChild(['big', 'albedo']);
  const b = await benchChild(['big', 'sdk']);
  row({ group, scenario: '16 MiB tool result end to end', unit: 'ms', albedo: a.ms!, peer: b.ms!, better: 'lower' });
  row({ group, scenario: '16 MiB tool result: peak RSS', unit: 'MB', albedo: a.peakRssMb!, peer: b.peakRssMb!, better: 'lower' });
  const ca = await benchChild(['catalogue', 'albedo']);
  const cb = await benchChild(['catalogue', 'sdk']);
  const wire = await benchChild(['catalogue', 'wire']);
  row({ group, scenario: '5,000-tool catalogue: connect and list all pages', unit: 'ms', albedo: ca.ms!, peer: cb.ms!, better: 'lower' });
  row({
    group,
    scenario: '5,000-tool catalogue: beyond wire time',
    unit: 'ms',
    albedo: ca.ms! - wire.ms!,
    peer: cb.ms! - wire.ms!,
    better: 'lower',
    target: '≤ 250 ms',
    targetAbs: 250,
  });
  row({ group, scenario: '5,000-tool catalogue: peak RSS', unit: 'MB', albedo: ca.peakRssMb!, peer: cb.peakRssMb!, better: 'lower' });
}
