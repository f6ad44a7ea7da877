/**
 * Scenarios that need a process of their own, so that memory is one
 * client's alone: `node --expose-gc bench/child.ts SCENARIO IMPL [N]`,
 * printing one JSON line.
 *
 *   memory IMPL N     marginal RSS per open stdio connection (N connections to
 *                     the raw echo server; server processes excluded; Albedo's
 *                     launchers reported separately, as PSS)
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
import { albedoImpl, sdkImpl, servers, RAW_ECHO, NODE, type Impl } from './lib.ts';
import { MAX_MESSAGE_BYTES } from '../protocol/framing.ts';
import { allReady, manyOf, writeServers } from './sessions.ts';

const [scenario, implName, nArg] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const rssMb = (): number => process.memoryUsage().rss / 2 ** 20;
const peakMb = (): number => process.resourceUsage().maxRSS / 1024;
const settle = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
};

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
    const n = Number(nArg ?? 10);
    const i = await impl();
    // One connection first, so that one-time costs (workers, modules) are not counted per connection.
    const first = await i.connect(servers.rawStdio('modern'));
    await first.call('echo', { text: 'warm' });
    await settle();
    const before = rssMb();
    const launchersBefore = launcherPssMb();
    const conns = [];
    for (let k = 0; k < n; k++) conns.push(await i.connect(servers.rawStdio('modern')));
    await Promise.all(conns.map((c) => c.call('echo', { text: 'x' })));
    await settle();
    const after = rssMb();
    const launchers = launcherPssMb() - launchersBefore;
    out = { n, rssBeforeMb: before, rssAfterMb: after, perConnMb: (after - before) / n, launcherPerConnMb: implName === 'albedo' ? launchers / n : 0 };
    await Promise.all([first, ...conns].map((c) => c.close()));
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
      await settle();
      const before = rssMb();
      const launchersBefore = launcherPssMb();
      for (let k = 0; k < m; k++) {
        const s = await albedo.sessions.open();
        await allReady(s, Object.keys(specs));
        open.push(s);
      }
      await settle();
      const after = rssMb();
      const launchers = launcherPssMb() - launchersBefore;
      out = { m, rssBeforeMb: before, rssAfterMb: after, perSessionMb: (after - before) / m, launcherPerSessionMb: launchers / m };
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
      const r = await c.call('big', { bytes }) as { content: Array<{ text: string }> };
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
