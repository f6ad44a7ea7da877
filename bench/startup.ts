/**
 * Start-up rows, run by bench/run.ts (`--only startup`): what a short-lived
 * use pays (a probe, a conformance client, a test): a fresh process that
 * imports the library, creates the client, connects to one stdio server and
 * makes one tools/call (bench/startup-child.mjs), Albedo (`createAlbedo`
 * through index.ts, a state directory kept across launches as a user's is)
 * vs the SDK client, alternating launches. The server is the raw echo
 * server compiled to JS, so no type stripping is timed in it. Reports the
 * median time from process start to the import done and to the first
 * call's result, and the median peak RSS of that process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NODE, ROOT, median } from './lib.ts';
import type { SessionBenchContext } from './sessions.ts';
import { runJson } from './proc.ts';

const GROUP = 'connect and discover';
const CHILD = path.join(ROOT, 'bench', 'startup-child.mjs');

export interface StartupBenchContext {
  quick: boolean;
  /** The compiled raw echo server (lib.ts writeRawEchoJs). */
  serverJs: string;
  row: SessionBenchContext['row'];
  log(s: string): void;
}

interface Launch {
  importMs: number;
  firstCallMs: number;
  peakRssMb: number;
}

function launch(impl: 'albedo' | 'sdk', serverJs: string, home: string): Promise<Launch> {
  return runJson<Launch>(CHILD, [impl, serverJs, home]);
}

export async function startupRows(ctx: StartupBenchContext): Promise<void> {
  const { quick, serverJs, row, log } = ctx;
  log('start-up: a fresh process to its first call');
  const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-startup-'));
  const runs: [Launch[], Launch[]] = [[], []];
  try {
    // A full run discards one launch of each first (the OS's file cache, Node's compile cache, the state directory's creation).
    if (!quick) for (const impl of ['albedo', 'sdk'] as const) await launch(impl, serverJs, home);
    for (let i = 0; i < (quick ? 1 : 5); i++) {
      runs[0].push(await launch('albedo', serverJs, home));
      runs[1].push(await launch('sdk', serverJs, home));
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const [a, b] = runs;
  const med = (xs: Launch[], f: keyof Launch): number => median(xs.map((x) => x[f]));
  row({
    group: GROUP,
    scenario: 'start-up: a new process to its first tools/call (import, create, connect, call)',
    unit: 'ms',
    albedo: med(a, 'firstCallMs'),
    peer: med(b, 'firstCallMs'),
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: 'start-up: of which the import of the library (from process start)',
    unit: 'ms',
    albedo: med(a, 'importMs'),
    peer: med(b, 'importMs'),
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: 'start-up: peak RSS of a one-connection process',
    unit: 'MB',
    albedo: med(a, 'peakRssMb'),
    peer: med(b, 'peakRssMb'),
    better: 'lower',
    target: '≤ 100 MB',
    targetAbs: 100,
  });
}
