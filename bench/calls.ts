/**
 * Call rows, run by bench/run.ts (`--only stdio`, `--only http`): sequential
 * latency (p50, p99) and throughput with N calls in flight, Albedo and the
 * SDK client alternating (A B A B …) over the rounds on fresh connections
 * after a warm-up; over stdio to the raw echo server and the SDK's echo
 * server in both eras, and over HTTP to the SDK's server in both eras.
 */
import { servers, startHttp, sequential, concurrent, median, percentile, type Impl, type ServerSpec, type BenchConn } from './lib.ts';
import type { RowSink } from './proc.ts';

export interface CallBenchContext {
  P: { rounds: number; warm: number; seq: number; conc: number; httpSeq: number; httpConc: number };
  impls: [Impl, Impl];
  row: RowSink;
  log(s: string): void;
}

/** Alternates the two clients over `rounds`, each round measuring `fn` on a fresh connection. */
async function alternate<T>(ctx: CallBenchContext, spec: () => ServerSpec, fn: (c: BenchConn) => Promise<T>): Promise<[T[], T[]]> {
  const out: [T[], T[]] = [[], []];
  for (let r = 0; r < ctx.P.rounds; r++) {
    for (const [k, impl] of ctx.impls.entries()) {
      const c = await impl.connect(spec());
      await sequential(c, ctx.P.warm);
      out[k]!.push(await fn(c));
      await c.close();
    }
  }
  return out;
}

async function callRows(
  ctx: CallBenchContext,
  group: string,
  label: string,
  spec: () => ServerSpec,
  seqN: number,
  concN: number,
  inFlight: number[],
  targets: { conc?: number; p50?: number },
): Promise<void> {
  const { row, log } = ctx;
  log(`${group}: ${label}`);
  const [a, b] = await alternate(ctx, spec, async (c) => {
    const lat = await sequential(c, seqN);
    const rates: number[] = [];
    for (const f of inFlight) rates.push(await concurrent(c, concN, f));
    return { p50: percentile(lat, 50), p99: percentile(lat, 99), rates };
  });
  row({
    group,
    scenario: `${label}: p50 latency`,
    unit: 'ms',
    albedo: median(a.map((x) => x.p50)),
    peer: median(b.map((x) => x.p50)),
    better: 'lower',
    target: targets.p50 !== undefined ? `≤ ${targets.p50}×` : undefined,
    targetRatio: targets.p50,
  });
  row({
    group,
    scenario: `${label}: p99 latency`,
    unit: 'ms',
    albedo: median(a.map((x) => x.p99)),
    peer: median(b.map((x) => x.p99)),
    better: 'lower',
  });
  inFlight.forEach((f, i) => {
    row({
      group,
      scenario: `${label}: ${f} in flight`,
      unit: 'calls/s',
      albedo: median(a.map((x) => x.rates[i]!)),
      peer: median(b.map((x) => x.rates[i]!)),
      better: 'higher',
      target: targets.conc !== undefined ? `≥ ${targets.conc}×` : undefined,
      targetRatio: targets.conc,
    });
  });
}

export async function stdioRows(ctx: CallBenchContext): Promise<void> {
  const { P } = ctx;
  for (const era of ['modern', 'legacy'] as const) {
    // Issue 14's targets: 32 in flight ≥ 1.5× (raw) and ≥ 1.2× (SDK server); sequential p50 ≤ 1.3× (raw) and ≤ 1.0× (SDK server).
    await callRows(ctx, 'stdio calls', `stdio, raw echo server, ${era}`, () => servers.rawStdio(era), P.seq, P.conc, [32], {
      conc: 1.5,
      p50: 1.3,
    });
    await callRows(ctx, 'stdio calls', `stdio, SDK echo server, ${era}`, () => servers.sdkStdio(era), P.seq, P.conc, [32], {
      conc: 1.2,
      p50: 1.0,
    });
  }
}

export async function httpRows(ctx: CallBenchContext): Promise<void> {
  const { P } = ctx;
  for (const [era, mode] of [
    ['modern', 'dual'],
    ['legacy', 'sessionful'],
  ] as const) {
    const srv = await startHttp('sdk-http-server.ts', ['--mode', mode]);
    try {
      await callRows(
        ctx,
        'HTTP calls',
        `HTTP, SDK server, ${era}`,
        () => ({ kind: 'http', url: srv.url, era }),
        P.httpSeq,
        P.httpConc,
        [32, 128],
        { conc: 2 },
      );
    } finally {
      srv.stop();
    }
  }
}
