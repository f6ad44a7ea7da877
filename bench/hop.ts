/**
 * Kernel hop rows, run by bench/run.ts (`--only hop`): a no-op call main →
 * transport worker → main through the kernel's public `callAny`
 * (`kernel/echo`, which a worker answers with fault injection on: the
 * instance of bench/lib.ts albedoImpl has it), beside its floor, a bare worker_threads round trip
 * (bench/hop-worker.ts: call and reply envelopes of the kernel's shape, one
 * persistent listener on each side, warmed like the kernel); and the
 * throughput of no-op calls with N in flight through each. The two
 * alternate (A B A B) over the rounds and report medians; the kernel's
 * internals (batching, envelopes) are whatever the code does at the time.
 */
import { Worker } from 'node:worker_threads';
import type { Albedo } from '../api/albedo.ts';
import { median } from './lib.ts';
import type { SessionBenchContext } from './sessions.ts';

const GROUP = 'kernel hop';

export interface HopBenchContext {
  P: { rounds: number; hop: number; hopBatch: number };
  kernel: Albedo['kernel'];
  row: SessionBenchContext['row'];
  log(s: string): void;
}

type Echo = (params: unknown) => Promise<unknown>;

/** A bare postMessage echo worker: `call` posts one call envelope and resolves with its reply's value. */
function bareWorker(): { call: Echo; close(): Promise<number> } {
  const w = new Worker(new URL('./hop-worker.ts', import.meta.url));
  const pending = new Map<number, (v: unknown) => void>();
  let next = 1;
  w.on('message', (m: { id: number; value: unknown }) => {
    const resolve = pending.get(m.id);
    pending.delete(m.id);
    resolve?.(m.value);
  });
  return {
    call: (params) =>
      new Promise((resolve) => {
        const id = next++;
        pending.set(id, resolve);
        w.postMessage({ kind: 'call', id, inc: 1, method: 'kernel/echo', params, deadline: Date.now() + 30_000 });
      }),
    close: () => w.terminate(),
  };
}

/** `n` sequential calls: p50 in µs. */
async function hopP50(call: Echo, n: number): Promise<number> {
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call({ x: 1 });
    lat.push(performance.now() - t0);
  }
  return median(lat) * 1000;
}

/** `total` calls with `inFlight` outstanding at any time: calls per second. */
async function rate(call: Echo, total: number, inFlight: number): Promise<number> {
  let started = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    while (started < total) {
      started++;
      await call({ x: 1 });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return total / ((performance.now() - t0) / 1000);
}

export async function hopRows(ctx: HopBenchContext): Promise<void> {
  const { P, kernel, row, log } = ctx;
  log('kernel hop');
  const viaKernel: Echo = (p) => kernel.callAny('transport', 'kernel/echo', p);
  const bare = bareWorker();
  const FLIGHTS = [32, 256];
  const results = [viaKernel, bare.call].map(() => ({ p50: [] as number[], rates: FLIGHTS.map(() => [] as number[]) }));
  try {
    // The same warm-up for both: the JIT, the worker's first messages, the kernel's slot (already started by albedoImpl).
    for (const call of [viaKernel, bare.call]) {
      for (let i = 0; i < 500; i++) await call({ x: 1 });
      await rate(call, 2_000, 32);
    }
    for (let r = 0; r < P.rounds; r++) {
      for (const [k, call] of [viaKernel, bare.call].entries()) {
        results[k]!.p50.push(await hopP50(call, P.hop));
        for (const [i, f] of FLIGHTS.entries()) results[k]!.rates[i]!.push(await rate(call, P.hopBatch, f));
      }
    }
  } finally {
    await bare.close();
  }
  const [a, b] = results as [(typeof results)[0], (typeof results)[0]];
  row({
    group: GROUP,
    scenario: 'no-op call main → worker service → main (p50)',
    unit: 'µs',
    albedo: median(a.p50),
    peer: median(b.p50),
    peerLabel: 'bare postMessage round trip',
    better: 'lower',
  });
  FLIGHTS.forEach((f, i) => {
    row({
      group: GROUP,
      scenario: `no-op calls through the kernel, ${f} in flight`,
      unit: 'calls/s',
      albedo: median(a.rates[i]!),
      peer: median(b.rates[i]!),
      peerLabel: `bare postMessage echo, ${f} in flight`,
      better: 'higher',
    });
  });
}
