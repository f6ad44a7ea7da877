/**
 * Connect-and-discover rows, run by bench/run.ts (`--only connect`): start
 * to full catalogue for a first connect (modern server; legacy server with
 * its era probed), a second connect with the era verdict cached (Albedo's
 * LMDB cache; the SDK client handed the same verdict), and N servers at
 * once. Each round uses a fresh state directory, so "first" is really first.
 */
import path from 'node:path';
import { albedoImpl, servers, median, type Impl, type ServerSpec } from './lib.ts';
import type { RowSink } from './proc.ts';

const GROUP = 'connect and discover';

export interface ConnectBenchContext {
  P: { rounds: number; connects: number; many: number };
  home: string;
  impls: [Impl, Impl];
  row: RowSink;
  log(s: string): void;
}

async function timeConnect(impl: Impl, spec: ServerSpec, cachedEra = false): Promise<number> {
  const t0 = performance.now();
  const c = await impl.connect(spec, { cachedEra });
  const ms = performance.now() - t0;
  await c.close();
  return ms;
}

export async function connectRows(ctx: ConnectBenchContext): Promise<void> {
  const { P, home, impls, row, log } = ctx;
  const sdk = impls[1];
  log('connect and discover');
  const first: number[][] = [[], []];
  const cachedFirst: number[][] = [[], []];
  const cachedSecond: number[][] = [[], []];
  for (let r = 0; r < P.connects; r++) {
    // A fresh state directory each round, so "first" is really first.
    const fresh = await albedoImpl(path.join(home, `connect-${r}`));
    try {
      first[0]!.push(await timeConnect(fresh, servers.sdkStdio('modern')));
      first[1]!.push(await timeConnect(sdk, servers.sdkStdio('modern')));
      cachedFirst[0]!.push(await timeConnect(fresh, servers.sdkStdio('legacy')));
      cachedFirst[1]!.push(await timeConnect(sdk, { ...servers.sdkStdio('legacy'), era: 'modern' }));
      cachedSecond[0]!.push(await timeConnect(fresh, servers.sdkStdio('legacy')));
      cachedSecond[1]!.push(await timeConnect(sdk, servers.sdkStdio('legacy'), true));
    } finally {
      await fresh.close();
    }
  }
  row({
    group: GROUP,
    scenario: 'first connect, SDK server (modern), start to full catalogue',
    unit: 'ms',
    albedo: median(first[0]!),
    peer: median(first[1]!),
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: 'first connect, SDK 1.x server (legacy; era probed)',
    unit: 'ms',
    albedo: median(cachedFirst[0]!),
    peer: median(cachedFirst[1]!),
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: 'second connect, same server (era verdict cached)',
    unit: 'ms',
    albedo: median(cachedSecond[0]!),
    peer: median(cachedSecond[1]!),
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: 'cached-era reconnect ÷ first connect (Albedo)',
    unit: '×',
    albedo: median(cachedSecond[0]!) / median(cachedFirst[0]!),
    peer: median(cachedSecond[1]!) / median(cachedFirst[1]!),
    better: 'lower',
    target: '≤ 0.6 (Albedo)',
    targetAbs: 0.6,
  });
  const many: number[][] = [[], []];
  for (let r = 0; r < Math.max(1, Math.min(P.rounds, 2)); r++) {
    for (const [k, impl] of impls.entries()) {
      const t0 = performance.now();
      const conns = await Promise.all(Array.from({ length: P.many }, () => impl.connect(servers.sdkStdio('modern'))));
      many[k]!.push(performance.now() - t0);
      await Promise.all(conns.map((c) => c.close()));
    }
  }
  row({
    group: GROUP,
    scenario: `${P.many} servers at once`,
    unit: 'ms',
    albedo: median(many[0]!),
    peer: median(many[1]!),
    better: 'lower',
  });
}
