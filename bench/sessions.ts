/**
 * Bench rows for `albedo.sessions` (issue 15, item 5), run by bench/run.ts:
 * opening a session over saved catalogues (no peer: against the target),
 * a call through a session vs through `connect()` (the composer must not
 * add a thread hop), opening a session whose servers have no saved
 * catalogue vs the SDK client connecting the same servers, and memory per
 * open session (bench/child.ts `sessions`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createAlbedo, type Albedo } from '../api/albedo.ts';
import type { AlbedoSession } from '../api/sessions.ts';
import { closeCatalogueStores } from '../services/catalogue/store.ts';
import type { RowSink } from './proc.ts';
import { albedoImpl, servers, sequential, concurrent, median, percentile, type BenchConn, type Impl, type ServerSpec } from './lib.ts';

/** What run.ts hands over: its sizes, its row sink, its logger, its child-process runner. */
export interface SessionBenchContext {
  P: {
    rounds: number;
    warm: number;
    seq: number;
    conc: number;
    many: number;
    sessions: { saved: number; opens: number; reopens: number; quietMs: number; memSessions: number };
  };
  home: string;
  sdk: Impl;
  row: RowSink;
  log(s: string): void;
  child(args: string[]): Promise<Record<string, number>>;
  /** The compiled raw echo server (lib.ts writeRawEchoJs), for the peer's memory child. */
  rawEchoJs: string;
}

const GROUP = 'sessions';

/** Writes `$home/extensions.json` naming these stdio servers (each with long timeouts, as the bench's connections have). */
export function writeServers(home: string, specs: Record<string, ServerSpec>): void {
  mkdirSync(home, { recursive: true });
  const entries: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(specs)) {
    if (s.kind !== 'stdio') throw new Error('stdio servers only');
    entries[name] = { command: s.command, args: s.args, callTimeoutMs: 120_000, startupTimeoutMs: 120_000 };
  }
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: entries } }, null, 2));
}

/** `n` servers named `s00`, `s01` …, each `spec()`. */
export function manyOf(n: number, spec: () => ServerSpec): Record<string, ServerSpec> {
  return Object.fromEntries(Array.from({ length: n }, (_, k) => [`s${String(k).padStart(2, '0')}`, spec()]));
}

/** Every server of the session dialled and ready (a call to each waits for its dial). */
export async function allReady(s: AlbedoSession, names: string[]): Promise<void> {
  await Promise.all(names.map((n) => s.call(`${n}/echo`, { text: 'ready' })));
}

/** The settings service started and answering (it starts with the first open, which an MCP-less one is). */
async function settingsUp(albedo: Albedo): Promise<void> {
  await (await albedo.sessions.open({ extensions: { mcp: false } })).close();
  await albedo.kernel.call('settings', 'settings/resolve-all', {});
}

/** A pause in which nothing of the bench runs, so that the servers just reaped have exited. */
const quiet = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The advertised (model-facing) name of `server`'s `tool`, as a model would call it. */
function advertised(s: AlbedoSession, server: string, tool: string): string {
  const frame = `[server ${JSON.stringify(server)}, tool ${JSON.stringify(tool)}]`;
  const found = s.tools().find((x) => x.description.startsWith(frame));
  if (!found) throw new Error(`no tool ${tool} of ${server} is advertised`);
  return found.name;
}

/** A session over the one server `echo` of `albedo`'s home, behind the bench's connection interface. */
function sessionImpl(albedo: Albedo): Impl {
  return {
    name: 'albedo',
    async connect() {
      const s = await albedo.sessions.open();
      const echo = advertised(s, 'echo', 'echo');
      return {
        call: (name, args) => s.call(name === 'echo' ? echo : `echo/${name}`, args),
        toolCount: () => s.tools().length,
        close: () => s.close(),
      };
    },
    close: async () => {},
  };
}

export async function sessionRows(ctx: SessionBenchContext): Promise<void> {
  const { P, row, log } = ctx;

  // 1. Open over saved catalogues: a first instance dials every server once (saving their catalogues); then, each
  // round, a new createAlbedo and sessions.open, timed until tools() is there. The servers are dialled after that.
  const n = P.sessions.saved;
  log(`sessions: open with ${n} saved catalogues`);
  {
    const home = path.join(ctx.home, 'sessions-saved');
    const specs = manyOf(n, () => servers.rawStdio('modern'));
    const names = Object.keys(specs);
    writeServers(home, specs);
    const seed = await createAlbedo({ home, transportWorkers: 2 });
    try {
      const s = await seed.sessions.open();
      if (s.status().some((x) => x.state !== 'ready')) throw new Error(`seeding: ${JSON.stringify(s.status())}`);
    } finally {
      await seed.close();
      await closeCatalogueStores();
    }
    const create: number[] = [];
    const first: number[] = [];
    const again: number[] = [];
    for (let r = 0; r < P.sessions.opens; r++) {
      const t0 = performance.now();
      const albedo = await createAlbedo({ home, transportWorkers: 2 });
      const t1 = performance.now();
      try {
        const s = await albedo.sessions.open();
        const count = s.tools().length;
        const t2 = performance.now();
        if (count < 2 * n) throw new Error(`only ${count} tools advertised`);
        create.push(t1 - t0);
        first.push(t2 - t1);
        // Then opens on a quiet instance, as a daemon's would be: the previous session's dials done, its servers reaped.
        let last = s;
        for (let k = 0; k < P.sessions.reopens; k++) {
          await allReady(last, names);
          await last.close();
          await quiet(P.sessions.quietMs);
          const t3 = performance.now();
          last = await albedo.sessions.open();
          last.tools();
          again.push(performance.now() - t3);
        }
      } finally {
        await albedo.close();
        await closeCatalogueStores();
      }
    }
    row({
      group: GROUP,
      scenario: `open, ${n} saved catalogues: first open of a new instance, the host workers' start included (p50)`,
      unit: 'ms',
      albedo: median(first),
      peer: null,
      better: 'lower',
      target: '≤ 20 ms',
      targetAbs: 20,
    });
    row({
      group: GROUP,
      scenario: `open, ${n} saved catalogues: later open, settings service running (p50)`,
      unit: 'ms',
      albedo: median(again),
      peer: null,
      better: 'lower',
      target: '≤ 20 ms',
      targetAbs: 20,
    });
    row({
      group: GROUP,
      scenario: `open, ${n} saved catalogues: createAlbedo + first open (p50)`,
      unit: 'ms',
      albedo: median(create.map((c, i) => c + first[i]!)),
      peer: null,
      better: 'lower',
    });
  }

  // 2. A call through a session vs a call through connect(), same instance, same raw echo server, alternating.
  log('sessions: call through a session vs connect()');
  {
    const home = path.join(ctx.home, 'sessions-call');
    writeServers(home, { echo: servers.rawStdio('modern') });
    const direct = await albedoImpl(home);
    try {
      const impls: [Impl, Impl] = [sessionImpl(direct.albedo), direct];
      const res: Array<Array<{ p50: number; p99: number; rate: number }>> = [[], []];
      for (let r = 0; r < P.rounds; r++) {
        for (const [k, impl] of impls.entries()) {
          const c: BenchConn = await impl.connect(servers.rawStdio('modern'));
          await sequential(c, P.warm);
          const lat = await sequential(c, P.seq);
          res[k]!.push({ p50: percentile(lat, 50), p99: percentile(lat, 99), rate: await concurrent(c, P.conc, 32) });
          await c.close();
        }
      }
      const [a, b] = res as [(typeof res)[0], (typeof res)[0]];
      const label = 'call, raw echo server: session vs connect()';
      row({
        group: GROUP,
        scenario: `${label}, p50 latency`,
        unit: 'ms',
        albedo: median(a.map((x) => x.p50)),
        peer: median(b.map((x) => x.p50)),
        peerLabel: 'connect()',
        better: 'lower',
        target: '≤ 1.1×',
        targetRatio: 1.1,
      });
      row({
        group: GROUP,
        scenario: `${label}, p99 latency`,
        unit: 'ms',
        albedo: median(a.map((x) => x.p99)),
        peer: median(b.map((x) => x.p99)),
        peerLabel: 'connect()',
        better: 'lower',
      });
      row({
        group: GROUP,
        scenario: `${label}, 32 in flight`,
        unit: 'calls/s',
        albedo: median(a.map((x) => x.rate)),
        peer: median(b.map((x) => x.rate)),
        peerLabel: 'connect()',
        better: 'higher',
      });
    } finally {
      await direct.close();
      await closeCatalogueStores();
    }
  }

  // 3. Open with no saved catalogue (every server dialled during preparation, in parallel) vs the SDK client
  // connecting the same servers at once (the shape of "N servers at once"). A fresh home each round; the settings
  // service is started (and answering) first, since a daemon pays for it once, not per session.
  log(`sessions: open with ${P.many} servers, no saved catalogue`);
  {
    const times: number[][] = [[], []];
    for (let r = 0; r < Math.max(1, Math.min(P.rounds, 2)); r++) {
      const home = path.join(ctx.home, `sessions-cold-${r}`);
      writeServers(
        home,
        manyOf(P.many, () => servers.sdkStdio('modern')),
      );
      const fresh = await albedoImpl(home);
      try {
        await settingsUp(fresh.albedo);
        const t0 = performance.now();
        const s = await fresh.albedo.sessions.open();
        times[0]!.push(performance.now() - t0);
        if (s.status().some((x) => x.state !== 'ready')) throw new Error(`cold open: ${JSON.stringify(s.status())}`);
        await s.close();
      } finally {
        await fresh.close();
        await closeCatalogueStores();
      }
      const t0 = performance.now();
      const conns = await Promise.all(Array.from({ length: P.many }, () => ctx.sdk.connect(servers.sdkStdio('modern'))));
      times[1]!.push(performance.now() - t0);
      await Promise.all(conns.map((c) => c.close()));
    }
    row({
      group: GROUP,
      scenario: `open, ${P.many} SDK servers, no saved catalogue (vs ${P.many} SDK clients at once)`,
      unit: 'ms',
      albedo: median(times[0]!),
      peer: median(times[1]!),
      better: 'lower',
    });
  }

  // 4. Memory per open session of 10 servers, in a process of its own; the peer holds 10 SDK clients per "session".
  const m = P.sessions.memSessions;
  log(`sessions: memory, ${m} sessions of 10 servers`);
  {
    const a = await ctx.child(['sessions', 'albedo', String(m)]);
    // The peer's marginal from one session's worth of connections (10) to as many more as the sessions opened.
    const b = await ctx.child(['memory', 'sdk', '10', String(10 + 10 * m), ctx.rawEchoJs]);
    row({
      group: GROUP,
      scenario: `memory: RSS per open session of 10 stdio servers (${m} sessions)`,
      unit: 'MB',
      albedo: a.perSessionMb!,
      peer: b.perConnMb! * 10,
      peerLabel: '10 SDK clients',
      better: 'lower',
    });
    row({
      group: GROUP,
      scenario: `memory: per open session of 10, with Albedo's launchers (PSS)`,
      unit: 'MB',
      albedo: a.perSessionMb! + a.launcherPerSessionMb!,
      peer: b.perConnMb! * 10,
      peerLabel: '10 SDK clients',
      better: 'lower',
    });
  }
}
