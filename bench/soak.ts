/**
 * The soak driver (issue 25 item 5), for the bench's `soak` group
 * (soakRows, bench/soak-plot.ts draws it) and test/soak/soak.test.ts: an
 * in-process createAlbedo over a home of real stdio servers, some `share:
 * true` and some per session, run in rounds of
 *
 * - churn: `churn` sessions closed and as many opened;
 * - calls: `calls` echo calls, every open session calling its servers in turn, all sessions at once;
 * - a list_changed storm: `storm` `set_tools` calls on the shared
 *   test/fixtures/composer-changing-server.ts (its tool list toggles, each
 *   announced to every session holding it);
 * - a crash, every `crashEvery` rounds, after the round's sample: SIGKILL of
 *   a random server process; the next round's calls to it bring it back;
 *
 * and sampled after each round's calls and storm (the main isolate GC'd first: gc is exposed if it was not):
 * process RSS and heap (process.memoryUsage), the transport workers' heaps, open fds (/proc/self/fd),
 * server processes and all processes started (launchers included), the
 * LMDB store's size ($ALBEDO_HOME/store), calls so far and calls that failed.
 *
 * Sign-in expiry is not soaked: it needs an OAuth server and HTTP servers behind it.
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createAlbedo, type AlbedoWithFaults } from '../api/albedo.ts';
import type { AlbedoSession } from '../api/sessions.ts';
import { closeCatalogueStores } from '../services/catalogue/store.ts';
import { NODE, ROOT } from './proc.ts';
import { descendants, fdCount, serverPids } from './tree.ts';

const FIX = (f: string): string => path.join(ROOT, 'test', 'fixtures', f);
/** The shared server whose tool list the storms toggle. */
export const CHANGING = 'changing';

export interface SoakOptions {
  /** A fresh directory: the driver writes extensions.json and the changing server's state into it. */
  home: string;
  sessions: number;
  /** Shared echo servers, besides the shared changing server (sdk-server.ts and sdk1-server.ts in turn). */
  shared: number;
  /** Per-session echo servers (sdk1-server.ts and sdk-server.ts in turn). */
  perSession: number;
  rounds: number;
  /** Echo calls per round, over every open session. */
  calls: number;
  /** Sessions closed and opened per round. */
  churn: number;
  /** set_tools calls per round. */
  storm: number;
  /** A server process SIGKILLed every this many rounds (0: never). */
  crashEvery: number;
  /** Test hook, to show the bounds can fail: churned sessions are left open instead of closed. */
  leakSessions?: boolean;
  log?(s: string): void;
}

export interface SoakSample {
  round: number;
  rssMb: number;
  heapMb: number;
  /** Heap used summed over the transport workers holding a connection (each GC'd first, through `worker/stats`). */
  workerHeapMb: number;
  fds: number;
  servers: number;
  processes: number;
  lmdbMb: number;
  calls: number;
  failed: number;
  seconds: number;
}

export interface SoakResult {
  samples: SoakSample[];
  /** Server processes expected with `sessions` sessions open: the shared ones once, the per-session ones per session. */
  expectedServers: number;
  /** Server processes and all processes left once every session is closed (waited for, bounded). */
  afterClose: { servers: number; processes: number };
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Bytes of `p`: a file's size, or the sum over a directory's files. */
function sizeOf(p: string): number {
  try {
    const st = statSync(p);
    if (!st.isDirectory()) return st.size;
    return readdirSync(p).reduce((n, f) => n + sizeOf(path.join(p, f)), 0);
  } catch {
    return 0;
  }
}

function writeSoakHome(o: SoakOptions): string[] {
  mkdirSync(path.join(o.home, 'changing'), { recursive: true });
  const stdio = (script: string, args: string[] = [], share = true): Record<string, unknown> => ({
    command: NODE,
    args: [FIX(script), ...args],
    share,
    callTimeoutMs: 60_000,
    startupTimeoutMs: 60_000,
  });
  const servers: Record<string, unknown> = { [CHANGING]: stdio('composer-changing-server.ts', [path.join(o.home, 'changing')]) };
  const echo: string[] = [];
  for (let k = 0; k < o.shared; k++) {
    servers[`shared${k}`] = stdio(k % 2 ? 'sdk1-server.ts' : 'sdk-server.ts');
    echo.push(`shared${k}`);
  }
  for (let k = 0; k < o.perSession; k++) {
    servers[`own${k}`] = stdio(k % 2 ? 'sdk-server.ts' : 'sdk1-server.ts', [], false);
    echo.push(`own${k}`);
  }
  writeFileSync(path.join(o.home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));
  return echo;
}

/** The advertised name of `server`'s `tool` in `s`, or undefined while it is not advertised. */
function toolName(s: AlbedoSession, server: string, tool: string): string | undefined {
  const frame = `[server ${JSON.stringify(server)}, tool ${JSON.stringify(tool)}]`;
  return s.tools().find((x) => x.description.startsWith(frame))?.name;
}

/** A new session, once none of its servers is `starting` (one a crash took down stays `advertised` until a call dials it). */
async function openReady(albedo: AlbedoWithFaults): Promise<AlbedoSession> {
  const s = await albedo.sessions.open();
  const end = Date.now() + 120_000;
  while (s.status().some((x) => x.state === 'starting') && Date.now() < end) await pause(50);
  return s;
}

let exposed: (() => void) | undefined;
/** The main isolate's gc(): global when node was started with --expose-gc, else exposed at run time (globalThis untouched). */
function gcOf(): () => void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) return g;
  if (!exposed) {
    v8.setFlagsFromString('--expose-gc');
    exposed = vm.runInNewContext('gc') as () => void;
  }
  return exposed;
}

/** Runs the soak; every session is closed and the instance too before it resolves. */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const gc = gcOf();
  const log = o.log ?? ((): void => {});
  const echo = writeSoakHome(o);
  // Fault injection on for its `worker/stats` alone (the workers' heaps); no fault is injected.
  const albedo = await createAlbedo({ home: o.home, transportWorkers: 2, faults: true });
  const open: AlbedoSession[] = [];
  const leaked: AlbedoSession[] = [];
  const samples: SoakSample[] = [];
  let calls = 0;
  let failed = 0;
  let flip = false;
  const t0 = performance.now();
  const call = async (s: AlbedoSession, server: string, tool: string, args: Record<string, unknown>): Promise<void> => {
    calls++;
    try {
      const name = toolName(s, server, tool);
      if (!name) throw new Error(`${server}/${tool} not advertised`);
      await s.call(name, args);
    } catch {
      failed++;
    }
  };
  try {
    while (open.length < o.sessions) open.push(await openReady(albedo));
    for (let round = 1; round <= o.rounds; round++) {
      // Churn: the oldest sessions leave, new ones come.
      for (let k = 0; k < o.churn; k++) {
        const gone = open.shift()!;
        if (o.leakSessions) leaked.push(gone);
        else await gone.close();
        open.push(await openReady(albedo));
      }
      // Calls: every session in a loop over its echo servers, all at once.
      const each = Math.ceil(o.calls / open.length);
      await Promise.all(
        open.map(async (s, i) => {
          for (let c = 0; c < each; c++) await call(s, echo[(i + c) % echo.length]!, 'echo', { text: 'soak' });
        }),
      );
      // A list_changed storm on the shared changing server.
      for (let k = 0; k < o.storm; k++) {
        flip = !flip;
        await call(open[k % open.length]!, CHANGING, 'set_tools', { names: flip ? ['alpha', 'beta'] : ['alpha'] });
      }
      await pause(200);
      // The last round: the processes of the sessions churned out are given time to exit (a launcher's grace is 2 s).
      const settle = Date.now() + (round === o.rounds ? 10_000 : 0);
      while (serverPids().length !== 1 + o.shared + o.sessions * o.perSession && Date.now() < settle) await pause(100);
      gc();
      const m = process.memoryUsage();
      let workerHeap = 0;
      for (const slot of albedo.kernel.slots('transport')) {
        if (slot.keys.length === 0) continue;
        workerHeap += (await albedo.faults.stats('transport', { gc: true }, { key: slot.keys[0]! })).heapUsed;
      }
      const sample: SoakSample = {
        round,
        rssMb: m.rss / 2 ** 20,
        heapMb: m.heapUsed / 2 ** 20,
        workerHeapMb: workerHeap / 2 ** 20,
        fds: fdCount(process.pid),
        servers: serverPids().length,
        processes: descendants().length,
        lmdbMb: sizeOf(path.join(o.home, 'store')) / 2 ** 20,
        calls,
        failed,
        seconds: (performance.now() - t0) / 1000,
      };
      samples.push(sample);
      log(`  soak round ${round}: ${JSON.stringify(sample)}`);
      // A crash, after the sample: the next round's calls to that server dial it again.
      if (o.crashEvery > 0 && round % o.crashEvery === 0 && round < o.rounds) {
        const pids = serverPids();
        const victim = pids[Math.floor(Math.random() * pids.length)];
        if (victim !== undefined) process.kill(victim, 'SIGKILL');
      }
    }
  } finally {
    for (const s of [...open, ...leaked]) await s.close().catch(() => {});
  }
  // Every session closed: no server may outlive them (waited for, bounded: a launcher's grace is 2 s).
  const end = Date.now() + 15_000;
  while (serverPids().length > 0 && Date.now() < end) await pause(100);
  const afterClose = { servers: serverPids().length, processes: descendants().length };
  await albedo.close();
  await closeCatalogueStores();
  return { samples, expectedServers: 1 + o.shared + o.sessions * o.perSession, afterClose };
}
