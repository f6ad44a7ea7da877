/**
 * Bench rows for the Python binding (issue 24), run by bench/run.ts (`--only python`):
 * a call of the raw echo server's tool, one daemon with that one server in a
 * home of its own, made
 *
 * - through the binding (`albedo.connect(home=…, start=False)`, `await
 *   mcp.call(…)`), sequentially (p50) and 32 in flight under asyncio.gather;
 * - from Python with no binding: `http.client` on kept-alive connections to
 *   the daemon's HTTP API, sequentially and from 32 threads with a connection
 *   each (bench/python_calls.py makes both, in one process a round);
 * - through the TS embedding API in-process (`albedo.sessions.open()` on a
 *   home with the same server), sequentially and 32 in flight.
 *
 * Rounds alternate the Python process and the embedded session; medians over the rounds.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { closeCatalogueStores } from '../services/catalogue/store.ts';
import type { AcpBenchContext } from './acp.ts';
import { startDaemon } from './daemon.ts';
import { writeServers } from './sessions.ts';
import { ROOT, albedoImpl, concurrent, median, percentile, sequential, servers, type BenchConn } from './lib.ts';

const GROUP = 'python';
const SCRIPT = path.join(ROOT, 'bench', 'python_calls.py');
/** The echo tool, as `server/tool`, in every client. */
const NAME = 'echo/echo';
const IN_FLIGHT = 32;

/** What run.ts hands over: the same as to the acp group (quick or not, rounds, a home, the raw echo server, the sink). */
export type PythonBenchContext = AcpBenchContext;

/** One client's round: its sequential latencies (ms, sorted) and its calls/s with 32 in flight. */
interface Side {
  seqMs: number[];
  rate: number;
}

interface Sizes {
  warm: number;
  calls: number;
  inFlightCalls: number;
}

/** A round of bench/python_calls.py against the daemon of `home`: the binding's side and raw HTTP's. */
async function pythonRound(home: string, z: Sizes): Promise<{ binding: Side; raw: Side }> {
  const python = process.env.ALBEDO_PYTHON || 'python3';
  const args = [SCRIPT, home, NAME, String(z.warm), String(z.calls), String(z.inFlightCalls)];
  const env = { ...process.env, PYTHONPATH: path.join(ROOT, 'python'), PYTHONDONTWRITEBYTECODE: '1' };
  const { stdout } = await promisify(execFile)(python, args, { env, maxBuffer: 64 << 20 });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

/** A round of the TS embedding API: a session of `albedo.sessions.open()`, closed after. */
async function embeddedRound(open: () => Promise<BenchConn>, z: Sizes): Promise<Side> {
  const c = await open();
  try {
    await sequential(c, z.warm);
    const seqMs = await sequential(c, z.calls);
    return { seqMs, rate: await concurrent(c, z.inFlightCalls, IN_FLIGHT) };
  } finally {
    await c.close();
  }
}

export async function pythonRows(ctx: PythonBenchContext): Promise<void> {
  const { row, log } = ctx;
  const z: Sizes = ctx.quick ? { warm: 20, calls: 100, inFlightCalls: 300 } : { warm: 200, calls: 2_000, inFlightCalls: 4_000 };
  // Homes of their own, each with the one raw echo server: the daemon's, and the embedded instance's.
  const home = path.join(ctx.home, 'python');
  const embeddedHome = path.join(ctx.home, 'python-embedded');
  for (const h of [home, embeddedHome]) {
    mkdirSync(h, { mode: 0o700 });
    writeServers(h, { echo: servers.rawJs(ctx.rawEchoJs, 'modern') });
  }
  const d = await startDaemon(home);
  const embedded = await albedoImpl(embeddedHome);
  const open = async (): Promise<BenchConn> => {
    const s = await embedded.albedo.sessions.open();
    return { call: (_name, args) => s.call(NAME, args), toolCount: () => s.tools().length, close: () => s.close() };
  };
  const sides: Record<'binding' | 'raw' | 'ts', Side[]> = { binding: [], raw: [], ts: [] };
  try {
    log(`python: ${z.calls} sequential calls and ${z.inFlightCalls} with ${IN_FLIGHT} in flight, ${ctx.rounds} rounds`);
    for (let r = 0; r < ctx.rounds; r++) {
      const py = await pythonRound(home, z);
      sides.binding.push(py.binding);
      sides.raw.push(py.raw);
      sides.ts.push(await embeddedRound(open, z));
    }
  } finally {
    await d.stop();
    await embedded.close();
    await closeCatalogueStores();
  }
  const p50 = (k: keyof typeof sides): number => median(sides[k].map((s) => percentile(s.seqMs, 50)));
  const rate = (k: keyof typeof sides): number => median(sides[k].map((s) => s.rate));
  const raw = 'raw HTTP from Python (http.client, keep-alive)';
  const ts = 'TS embedding API in-process (albedo.sessions)';
  row({
    group: GROUP,
    scenario: 'python: binding call, p50',
    unit: 'ms',
    albedo: p50('binding'),
    peer: p50('raw'),
    peerLabel: raw,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: 'python: binding call vs the TS embedding API, p50',
    unit: 'ms',
    albedo: p50('binding'),
    peer: p50('ts'),
    peerLabel: ts,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `python: binding, ${IN_FLIGHT} in flight (asyncio.gather)`,
    unit: 'calls/s',
    albedo: rate('binding'),
    peer: rate('raw'),
    peerLabel: `${raw}, ${IN_FLIGHT} threads with a connection each`,
    better: 'higher',
  });
  row({
    group: GROUP,
    scenario: `python: binding vs the TS embedding API, ${IN_FLIGHT} in flight`,
    unit: 'calls/s',
    albedo: rate('binding'),
    peer: rate('ts'),
    peerLabel: ts,
    better: 'higher',
  });
}
