/**
 * Bench rows for shared connections (issue 25 item 1), run by bench/run.ts
 * (`--only sharing`). N sessions over the same M real stdio servers
 * (test/fixtures/sdk-server.ts, sdk1-server.ts, server-everything and
 * server-filesystem, in turn), each side in a process of its own (this file,
 * `child …`), counted and summed over that process and every process it
 * started (bench/tree.ts: /proc VmRSS and fd count; Albedo's launchers
 * included):
 *
 * - Albedo with `share: true` vs `share: false` vs the official SDK client
 *   with one client and one process per session per server (the "no sharing"
 *   peer): server processes, total RSS, fds. Per-session sides launch a
 *   process per session per server, so they are measured at NPS sessions
 *   (full: 10 × 10 = 100 processes); the shared side at NPS and at N (full:
 *   100 × 10), beside the peer extrapolated linearly from NPS to N.
 * - Memory per added session, shared: the RSS delta from NPS to N sessions.
 * - Call p50 (p99) with N sessions calling at once, each the echo tool of its
 *   server in a loop: one shared connection vs a connection (and process) each.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE, ROOT, runJson, type RowSink } from './proc.ts';
import { sampleTree } from './tree.ts';

const GROUP = 'sharing';
const SELF = fileURLToPath(import.meta.url);
const FIX = (f: string): string => path.join(ROOT, 'test', 'fixtures', f);
const MCP = path.join(ROOT, 'node_modules', '@modelcontextprotocol');

interface Spec {
  command: string;
  args: string[];
  era: 'modern' | 'legacy';
}

/** The k-th server of a home: the four real stdio servers in turn; `s00` is sdk-server.ts, whose `echo` the call rows use. */
export function serverSpec(k: number, dir: string): Spec {
  switch (k % 4) {
    case 0:
      return { command: NODE, args: [FIX('sdk-server.ts')], era: 'modern' };
    case 1:
      return { command: NODE, args: [FIX('sdk1-server.ts')], era: 'legacy' };
    case 2:
      return { command: NODE, args: [path.join(MCP, 'server-everything', 'dist', 'index.js')], era: 'legacy' };
    default:
      return { command: NODE, args: [path.join(MCP, 'server-filesystem', 'dist', 'index.js'), dir], era: 'legacy' };
  }
}

const names = (m: number): string[] => Array.from({ length: m }, (_, k) => `s${String(k).padStart(2, '0')}`);

/** Writes `home/extensions.json` with `m` servers, every one `share`d or not. */
export function writeHome(home: string, m: number, share: boolean, extra: Record<string, unknown> = {}): void {
  mkdirSync(home, { recursive: true });
  const servers: Record<string, unknown> = {};
  for (const [k, n] of names(m).entries()) {
    const s = serverSpec(k, home);
    servers[n] = { command: s.command, args: s.args, share, callTimeoutMs: 120_000, startupTimeoutMs: 120_000, ...extra };
  }
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

/** The tree after a settle and a GC of the main isolate. */
async function settled(): Promise<ReturnType<typeof sampleTree>> {
  await pause(500);
  gc();
  await pause(100);
  return sampleTree();
}

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

type Caller = () => Promise<unknown>;

/** Every caller in a loop of `calls`, all at once (one warm-up call each first): p50 and p99 of the calls, ms. */
async function storm(callers: Caller[], calls: number): Promise<{ p50: number; p99: number }> {
  await Promise.all(callers.map((c) => c()));
  const lat: number[] = [];
  await Promise.all(
    callers.map(async (c) => {
      for (let i = 0; i < calls; i++) {
        const t0 = performance.now();
        await c();
        lat.push(performance.now() - t0);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  return { p50: pct(lat, 50), p99: pct(lat, 99) };
}

/** `child albedo HOME SHARE NPS N M CALLS`: sessions opened to NPS, sampled, to N, sampled; then N sessions call s00/echo at once. */
async function albedoChild(home: string, share: boolean, nps: number, n: number, m: number, calls: number): Promise<object> {
  const { createAlbedo } = await import('../api/albedo.ts');
  const { closeCatalogueStores } = await import('../services/catalogue/store.ts');
  writeHome(home, m, share);
  const albedo = await createAlbedo({ home, transportWorkers: 2 });
  const base = await settled();
  const sessions: Awaited<ReturnType<typeof albedo.sessions.open>>[] = [];
  const openTo = async (k: number): Promise<void> => {
    while (sessions.length < k) sessions.push(await albedo.sessions.open());
    const end = Date.now() + 300_000;
    while (sessions.some((s) => s.status().some((x) => x.state !== 'ready'))) {
      if (Date.now() > end)
        throw new Error(`not ready: ${JSON.stringify(sessions.find((s) => s.status().some((x) => x.state !== 'ready'))!.status())}`);
      await pause(50);
    }
  };
  await openTo(nps);
  const small = await settled();
  await openTo(n);
  const large = n === nps ? small : await settled();
  const echo = (s: (typeof sessions)[0]): string => {
    const t = s.tools().find((x) => x.description.startsWith('[server "s00", tool "echo"]'));
    if (!t) throw new Error('no s00 echo tool');
    return t.name;
  };
  const callers = sessions.map((s) => {
    const name = echo(s);
    return () => s.call(name, { text: 'x' });
  });
  const r = calls > 0 ? await storm(callers, calls) : null;
  for (const s of sessions) await s.close();
  await albedo.close();
  await closeCatalogueStores();
  return { base, small, large, ...(r ?? {}) };
}

/** `child sdk HOME NPS M`: NPS × M official SDK clients, each with its own server process, every catalogue listed. */
async function sdkChild(home: string, nps: number, m: number): Promise<object> {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  mkdirSync(home, { recursive: true });
  const base = await settled();
  const clients: InstanceType<typeof Client>[] = [];
  for (let i = 0; i < nps; i++) {
    for (let k = 0; k < m; k++) {
      const s = serverSpec(k, home);
      const c = new Client(
        { name: 'bench-peer', version: '1.0.0' },
        { versionNegotiation: { mode: s.era === 'modern' ? 'auto' : 'legacy' } },
      );
      await c.connect(new StdioClientTransport({ command: s.command, args: s.args, stderr: 'ignore' }));
      const caps = c.getServerCapabilities() ?? {};
      if (caps.tools) await c.listTools();
      if (caps.prompts) await c.listPrompts();
      if (caps.resources) await c.listResources();
      clients.push(c);
    }
  }
  const small = await settled();
  await Promise.all(clients.map((c) => c.close()));
  return { base, small };
}

type Tree = ReturnType<typeof sampleTree>;
interface AlbedoOut {
  base: Tree;
  small: Tree;
  large: Tree;
  p50?: number;
  p99?: number;
}

export interface SharingBenchContext {
  quick: boolean;
  home: string;
  row: RowSink;
  log(s: string): void;
}

export async function sharingRows(ctx: SharingBenchContext): Promise<void> {
  const { row, log } = ctx;
  const z = ctx.quick ? { n: 4, nps: 2, m: 2, calls: 20 } : { n: 100, nps: 10, m: 10, calls: 30 };
  const child = <T>(args: string[]): Promise<T> => runJson<T>(SELF, ['child', ...args], ['--expose-gc']);
  const dir = (k: string): string => path.join(ctx.home, `sharing-${k}`);
  const { n, nps, m } = z;
  log(`sharing: ${n} sessions × ${m} servers shared; ${nps} × ${m} per session and SDK clients; ${n} sessions calling at once`);
  const sh = await child<AlbedoOut>(['albedo', dir('shared'), 'true', String(nps), String(n), String(m), String(z.calls)]);
  const own = await child<AlbedoOut>(['albedo', dir('own'), 'false', String(nps), String(nps), String(m), '0']);
  const sdk = await child<{ base: Tree; small: Tree }>(['sdk', dir('sdk'), String(nps), String(m)]);
  // N sessions over one per-session server: N processes, each session calling its own.
  const ownCalls = await child<AlbedoOut>(['albedo', dir('own-calls'), 'false', String(n), String(n), '1', String(z.calls)]);
  log(`  samples: ${JSON.stringify({ sh, own, sdk, ownCalls: { p50: ownCalls.p50, p99: ownCalls.p99 } })}`);

  const at = `${nps} sessions × ${m} stdio servers`;
  const sdkLabel = `SDK clients, one client + process per session per server`;
  const sdkGrown = sdk.small.rssMb - sdk.base.rssMb;
  const put = (scenario: string, unit: string, albedo: number, peer: number, peerLabel: string): void =>
    row({ group: GROUP, scenario, unit, albedo, peer, peerLabel, better: 'lower' });
  put(`${at}: server processes, shared vs share: false`, 'processes', sh.small.servers, own.small.servers, 'share: false');
  put(`${at}: total RSS, shared vs share: false`, 'MB', sh.small.rssMb, own.small.rssMb, 'share: false');
  put(`${at}: open fds, shared vs share: false`, 'fds', sh.small.fds, own.small.fds, 'share: false');
  put(`${at}: server processes, shared vs no sharing`, 'processes', sh.small.servers, sdk.small.servers, sdkLabel);
  put(`${at}: total RSS, shared vs no sharing`, 'MB', sh.small.rssMb, sdk.small.rssMb, sdkLabel);
  put(`${at}: open fds, shared vs no sharing`, 'fds', sh.small.fds, sdk.small.fds, sdkLabel);
  put(`${at}: total RSS, share: false vs no sharing`, 'MB', own.small.rssMb, sdk.small.rssMb, sdkLabel);
  if (n > nps) {
    const big = `${n} sessions × ${m} stdio servers`;
    // The peer's processes are n × m by construction; its RSS from its own growth over nps sessions, scaled to n.
    put(`${big}: server processes, shared vs no sharing`, 'processes', sh.large.servers, n * m, `${sdkLabel} (n × m)`);
    const scaled = sdk.base.rssMb + (sdkGrown * n) / nps;
    put(`${big}: total RSS, shared vs no sharing`, 'MB', sh.large.rssMb, scaled, `${sdkLabel}; extrapolated from ${nps} sessions`);
    const perSession = (sh.large.rssMb - sh.small.rssMb) / (n - nps);
    put(
      `memory per added session, ${m} shared servers (${nps} → ${n} sessions)`,
      'MB',
      perSession,
      sdkGrown / nps,
      `${m} SDK clients + processes`,
    );
  }
  const calls = `${n} sessions calling echo at once, ${z.calls} calls each`;
  put(`${calls}: p50, one shared connection vs one each`, 'ms', sh.p50!, ownCalls.p50!, 'share: false');
  put(`${calls}: p99, one shared connection vs one each`, 'ms', sh.p99!, ownCalls.p99!, 'share: false');
}

if (process.argv[1] === SELF && process.argv[2] === 'child') {
  const [kind, home, ...rest] = process.argv.slice(3);
  const num = (i: number): number => Number(rest[i]);
  const out =
    kind === 'sdk' ? await sdkChild(home!, num(0), num(1)) : await albedoChild(home!, rest[0] === 'true', num(1), num(2), num(3), num(4));
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}
