/**
 * Scenarios that need a process of their own, so that memory is one
 * client's alone: `node --expose-gc bench/child.ts SCENARIO IMPL [N]`,
 * printing one JSON line.
 *
 *   memory IMPL LO HI SERVER_JS
 *                     marginal memory per open stdio connection between LO and
 *                     HI connections to the compiled raw echo server SERVER_JS:
 *                     this process's RSS (worker heaps included) and, apart,
 *                     Albedo's launchers as PSS; servers excluded. Each point is
 *                     taken after forced GC in every isolate until RSS stops
 *                     falling (see settled)
 *   big IMPL          a 16 MiB tool result end to end: ms, peak RSS
 *   sessions albedo S marginal RSS per open session of 10 raw echo servers (S
 *                     sessions, after a first one; launchers as PSS)
 *   catalogue IMPL    connect + discover a 5,000-tool catalogue: ms, peak RSS
 *                     (IMPL `wire`: a bare JSON-RPC reader, the wire time)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { albedoImpl, sdkImpl, servers, RAW_ECHO, NODE, type BenchConn, type Impl } from './lib.ts';
import type { Albedo } from '../api/albedo.ts';
import type { WorkerStats } from '../protocol/services/envelope.ts';
import { MAX_MESSAGE_BYTES } from '../protocol/framing.ts';
import { allReady, manyOf, writeServers } from './sessions.ts';

const [scenario, implName, nArg, ...rest] = process.argv.slice(2);
const exposedGc = (globalThis as { gc?: (o?: unknown) => void }).gc ?? (() => {});
// The last-resort flavour (several passes, as under memory pressure) also shrinks the young generation and returns pooled pages:
// after a plain gc() RSS still swings by 10–30 MB with V8's new-space sizing and its memory reducer, more than the 10 → 100 signal.
const gc = (): void => exposedGc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
const rssMb = (): number => process.memoryUsage().rss / 2 ** 20;
const peakMb = (): number => process.resourceUsage().maxRSS / 1024;

/** PSS (MB) of this process's children running the stdio launcher. */
function launcherPssMb(): number {
  let kb = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (!/launcher\.py|albedo-launcher/.test(readFileSync(`/proc/${d}/cmdline`, 'utf8'))) continue;
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${d}/smaps_rollup`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // gone, or not ours
    }
  }
  return kb / 1024;
}

async function impl(): Promise<Impl> {
  return implName === 'albedo' ? albedoImpl(null) : sdkImpl();
}

interface Settled {
  rssMb: number;
  heapMb: number;
  launchersMb: number;
  workerHeapMb: number | null;
  rounds: number;
}

/**
 * This process's memory at rest: last-resort GCs on the main thread and,
 * through `worker/stats` (fault injection's, on in albedoImpl), full GCs in each
 * transport worker that holds a connection (a call keyed by one of its
 * keys, from the kernel's `slots()`, reaches that worker alone and starts
 * none), summing their heaps; repeated until RSS stops falling (freed pages
 * go back to the OS over several collections), at least three times.
 */
async function settled(kernel: Albedo['kernel'] | undefined): Promise<Settled> {
  let prev = Infinity;
  let workerHeapMb: number | null = null;
  let rounds = 0;
  for (; rounds < 15; rounds++) {
    gc();
    gc();
    if (kernel) {
      const keys = kernel.slots('transport').flatMap((s) => s.keys.slice(0, 1));
      const stats = [];
      for (const key of keys) stats.push((await kernel.callAny('transport', 'worker/stats', { gc: true }, { key })) as WorkerStats);
      workerHeapMb = stats.reduce((n, s) => n + s.heapUsed, 0) / 2 ** 20;
    }
    await new Promise((r) => setTimeout(r, 100));
    gc();
    const rss = rssMb();
    if (rounds >= 2 && prev - rss < 0.25) break;
    prev = Math.min(prev, rss);
  }
  const m = process.memoryUsage();
  return { rssMb: m.rss / 2 ** 20, heapMb: m.heapTotal / 2 ** 20, launchersMb: launcherPssMb(), workerHeapMb, rounds: rounds + 1 };
}

/** The wire time of a catalogue: spawn, handshake and every tools/list page, parsed and nothing more. */
async function wireCatalogue(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(NODE, [RAW_ECHO, '--era', 'modern', '--tools', '5000'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const rl = createInterface({ input: child.stdout! });
  const lines = rl[Symbol.asyncIterator]();
  const ask = async (id: number, method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
    child.stdin!.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    const { value } = await lines.next();
    return (JSON.parse(value as string) as { result: Record<string, unknown> }).result;
  };
  await ask(0, 'server/discover');
  let cursor: unknown;
  let id = 1;
  let count = 0;
  do {
    const r = await ask(id++, 'tools/list', cursor === undefined ? {} : { cursor });
    count += (r.tools as unknown[]).length;
    cursor = r.nextCursor;
  } while (cursor !== undefined);
  const ms = performance.now() - t0;
  child.stdin!.end();
  if (count < 5000) throw new Error(`wire read ${count} tools`);
  return ms;
}

let out: Record<string, unknown>;
switch (scenario) {
  case 'memory': {
    const [lo, hi] = [Number(nArg), Number(rest[0])];
    const serverJs = rest[1]!;
    if (!(lo >= 1 && hi > lo) || !serverJs) throw new Error('usage: child.ts memory IMPL LO HI SERVER_JS');
    const i = await impl();
    const kernel = (i as Partial<Awaited<ReturnType<typeof albedoImpl>>>).albedo?.kernel;
    const conns: BenchConn[] = [];
    // Ten at a time (a server's start dominates a connect), then a call on each, so every connection is fully set up.
    const openTo = async (n: number): Promise<void> => {
      while (conns.length < n) {
        const batch = Math.min(10, n - conns.length);
        conns.push(...(await Promise.all(Array.from({ length: batch }, () => i.connect(servers.rawJs(serverJs))))));
      }
      await Promise.all(conns.map((c) => c.call('echo', { text: 'x' })));
    };
    await openTo(lo);
    const a = await settled(kernel);
    await openTo(hi);
    const b = await settled(kernel);
    const per = (x: number, y: number): number => (y - x) / (hi - lo);
    out = {
      lo,
      hi,
      rssLoMb: a.rssMb,
      rssHiMb: b.rssMb,
      heapTotalLoMb: a.heapMb,
      heapTotalHiMb: b.heapMb,
      settleRounds: Math.max(a.rounds, b.rounds),
      perConnMb: per(a.rssMb, b.rssMb),
      launcherPerConnMb: implName === 'albedo' ? per(a.launchersMb, b.launchersMb) : 0,
      ...(a.workerHeapMb !== null && b.workerHeapMb !== null ? { workerHeapPerConnMb: per(a.workerHeapMb, b.workerHeapMb) } : {}),
    };
    await Promise.all(conns.map((c) => c.close()));
    await i.close();
    break;
  }
  case 'sessions': {
    const m = Number(nArg ?? 2);
    const home = mkdtempSync(path.join(os.tmpdir(), 'albedo-bench-sessions-'));
    try {
      const specs = manyOf(10, () => servers.rawStdio('modern'));
      writeServers(home, specs);
      const { albedo } = await albedoImpl(home);
      // A first session (it also saves the catalogues), so that one-time costs (the settings worker, LMDB) are not counted.
      const open = [await albedo.sessions.open()];
      await allReady(open[0]!, Object.keys(specs));
      const a = await settled(albedo.kernel);
      for (let k = 0; k < m; k++) {
        const s = await albedo.sessions.open();
        await allReady(s, Object.keys(specs));
        open.push(s);
      }
      const b = await settled(albedo.kernel);
      out = {
        m,
        rssBeforeMb: a.rssMb,
        rssAfterMb: b.rssMb,
        perSessionMb: (b.rssMb - a.rssMb) / m,
        launcherPerSessionMb: (b.launchersMb - a.launchersMb) / m,
      };
      await albedo.close();
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    break;
  }
  case 'big': {
    const bytes = MAX_MESSAGE_BYTES - 64 * 1024;
    const i = await impl();
    const c = await i.connect(servers.rawStdio('modern'));
    const times: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      const r = (await c.call('big', { bytes })) as { content: Array<{ text: string }> };
      times.push(performance.now() - t0);
      if (r.content[0]!.text.length !== bytes) throw new Error('short result');
    }
    out = { bytes, ms: times.sort((a, b) => a - b)[1], peakRssMb: peakMb() };
    await c.close();
    await i.close();
    break;
  }
  case 'catalogue': {
    if (implName === 'wire') {
      const times = [await wireCatalogue(), await wireCatalogue(), await wireCatalogue()].sort((a, b) => a - b);
      out = { ms: times[1], peakRssMb: peakMb() };
      break;
    }
    const i = await impl();
    const times: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      const c = await i.connect(servers.rawStdio('modern', ['--tools', '5000']));
      times.push(performance.now() - t0);
      if (c.toolCount() < 5000) throw new Error(`only ${c.toolCount()} tools`);
      await c.close();
    }
    out = { ms: times.sort((a, b) => a - b)[1], peakRssMb: peakMb() };
    await i.close();
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
