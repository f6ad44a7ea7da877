/**
 * Bench rows for the daemon as an MCP server (issue 22), run by bench/run.ts
 * (`--only gateway`). The client is always the official SDK client 2.x; what
 * stands between it and the server changes:
 *
 * 1. the raw echo server (stdio) called directly, through `albedo gateway
 *    --server NAME` (stdio) and through the pass-through gateway
 *    `/mcp/gateways/NAME` (HTTP), in both eras: p50 overhead over direct and
 *    calls/s at 32 in flight; in the 2025 era also through supergateway and
 *    mcp-proxy fronting the same server (bench/gateway-peers.ts);
 * 2. the raw echo server over HTTP called directly, through `albedo gateway
 *    --server NAME` for an HTTP entry of the same URL, and through mcp-remote;
 * 3. the first `tools/list` a freshly started daemon answers for a composed
 *    gateway over N servers whose catalogues the daemon before it saved,
 *    beside N supergateway and N mcp-proxy processes listed in parallel.
 *
 * Connections are made once and measured in alternating rounds (every path
 * once per round, after a warm-up); rows are medians over the rounds.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'undici';
import type { RowSink } from './proc.ts';
import { startDaemon, type Running } from './daemon.ts';
import {
  mcpRemoteArgs,
  peerEnv,
  peerVersions,
  sdkClient,
  startMcpProxy,
  startRawEchoHttp,
  startSupergateway,
  type Era,
  type Proc,
} from './gateway-peers.ts';
import { NODE, ROOT, concurrent, median, percentile, sequential, type BenchConn } from './lib.ts';

const GROUP = 'gateway';
const BIN = path.join(ROOT, 'bin', 'albedo.js');
const TIMEOUTS = { callTimeoutMs: 120_000, startupTimeoutMs: 120_000 };

export interface GatewayBenchContext {
  P: { rounds: number; warm: number; many: number };
  quick: boolean;
  home: string;
  rawEchoJs: string;
  row: RowSink;
  log(s: string): void;
}

/** `$home/extensions.json` with these servers (stdio: [command, ...args]; HTTP: a URL) and gateways. */
function writeHome(home: string, servers: Record<string, string[] | string>, gateways: Record<string, unknown>): void {
  const entries: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(servers))
    entries[name] = typeof s === 'string' ? { url: s, ...TIMEOUTS } : { command: s[0], args: s.slice(1), ...TIMEOUTS };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: entries }, gateways }, null, 2), { mode: 0o600 });
}

/** The SDK client through `albedo gateway --server NAME` (bin/albedo.js, as a host's config runs it). */
function viaStdioGateway(era: Era, home: string, server: string): Promise<BenchConn> {
  const env = { ...(process.env as Record<string, string>), ALBEDO_HOME: home };
  return sdkClient(era, { kind: 'stdio', command: NODE, args: [BIN, 'gateway', '--server', server], env });
}

/** The SDK client through the daemon's gateway `name` over Streamable HTTP, with the daemon's token. */
function viaHttpGateway(era: Era, d: Running, name: string): ReturnType<typeof sdkClient> {
  return sdkClient(era, { kind: 'http', url: `http://127.0.0.1:${d.port}/mcp/gateways/${name}`, token: d.token });
}

interface Measured {
  p50: number[];
  rate: number[];
}

/** Calls per measurement: small in --quick (a few seconds, whatever the machine's load); the HTTP gateway is the slow path. */
function sizes(ctx: GatewayBenchContext): { rounds: number; warm: number; seq: number; conc: number } {
  const { P } = ctx;
  return ctx.quick ? { rounds: 1, warm: 10, seq: 50, conc: 100 } : { rounds: P.rounds, warm: P.warm, seq: 1_000, conc: 2_000 };
}

/** Every path once per round (after a warm-up): p50 of `seq` sequential calls, and calls/s at 32 in flight. */
async function measure(ctx: GatewayBenchContext, conns: Record<string, BenchConn>): Promise<Record<string, Measured>> {
  const S = sizes(ctx);
  const out: Record<string, Measured> = {};
  for (const [k, c] of Object.entries(conns)) {
    out[k] = { p50: [], rate: [] };
    await sequential(c, S.warm);
  }
  for (let r = 0; r < S.rounds; r++) {
    for (const [k, c] of Object.entries(conns)) {
      out[k]!.p50.push(percentile(await sequential(c, S.seq), 50));
      out[k]!.rate.push(await concurrent(c, S.conc, 32));
    }
  }
  return out;
}

/** The rows of one path against the direct call: p50, its overhead (target ≤ 0.3 ms), and 32 in flight. */
function againstDirect(row: RowSink, what: string, m: Measured, direct: Measured, directLabel: string): void {
  const p50 = median(m.p50);
  const d50 = median(direct.p50);
  row({
    group: GROUP,
    scenario: `${what} vs direct: p50 latency`,
    unit: 'ms',
    albedo: p50,
    peer: d50,
    peerLabel: directLabel,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `${what}: overhead over direct at p50`,
    unit: 'ms',
    albedo: p50 - d50,
    peer: null,
    better: 'lower',
    target: '≤ 0.3 ms',
    targetAbs: 0.3,
  });
  const rate = median(m.rate);
  const dRate = median(direct.rate);
  row({
    group: GROUP,
    scenario: `${what} vs direct: 32 in flight`,
    unit: 'calls/s',
    albedo: rate,
    peer: dRate,
    peerLabel: directLabel,
    better: 'higher',
  });
}

/** The rows of Albedo's path against a peer's in front of the same server: p50, and 32 in flight (target ≥ 1.5×). */
function againstPeer(row: RowSink, what: string, m: Measured, peer: Measured, peerLabel: string): void {
  row({
    group: GROUP,
    scenario: `${what}: p50 latency`,
    unit: 'ms',
    albedo: median(m.p50),
    peer: median(peer.p50),
    peerLabel,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `${what}: 32 in flight`,
    unit: 'calls/s',
    albedo: median(m.rate),
    peer: median(peer.rate),
    peerLabel,
    better: 'higher',
    target: '≥ 1.5×',
    targetRatio: 1.5,
  });
}

async function closeAll(conns: Record<string, BenchConn>, procs: Array<{ stop(): Promise<void> }>): Promise<void> {
  await Promise.allSettled(Object.values(conns).map((c) => c.close()));
  await Promise.allSettled(procs.map((p) => p.stop()));
}

/** 1. A stdio server: direct, through both of Albedo's gateways, and (2025 era) through supergateway and mcp-proxy. */
async function stdioServerRows(ctx: GatewayBenchContext, d: Running, home: string, era: Era): Promise<void> {
  const { row, log } = ctx;
  const server = [NODE, ctx.rawEchoJs, '--era', era];
  log(`gateway: raw echo server (stdio, ${era}): direct, albedo gateway --server, /mcp/gateways/NAME${era === 'legacy' ? ', peers' : ''}`);
  const conns: Record<string, BenchConn> = {};
  const procs: Proc[] = [];
  try {
    conns.direct = await sdkClient(era, { kind: 'stdio', command: server[0]!, args: server.slice(1) });
    conns.stdio = await viaStdioGateway(era, home, `echo_${era}`);
    conns.http = await viaHttpGateway(era, d, `echo_${era}`);
    if (era === 'legacy') {
      const sg = await startSupergateway(server, path.join(ctx.home, 'peer-sg'));
      procs.push(sg);
      conns.supergateway = await sdkClient(era, { kind: 'http', url: sg.url });
      const mp = await startMcpProxy(server, path.join(ctx.home, 'peer-mp'));
      procs.push(mp);
      conns.mcpProxy = await sdkClient(era, { kind: 'http', url: mp.url });
    }
    const m = await measure(ctx, conns);
    const direct = `direct, SDK client over stdio`;
    againstDirect(row, `gateway, stdio server (${era}): albedo gateway --server (stdio)`, m.stdio!, m.direct!, direct);
    againstDirect(row, `gateway, stdio server (${era}): /mcp/gateways/NAME (HTTP)`, m.http!, m.direct!, direct);
    if (era === 'legacy') {
      againstPeer(
        row,
        'gateway, stdio server over HTTP (legacy): Albedo vs supergateway',
        m.http!,
        m.supergateway!,
        'supergateway --stateful',
      );
      againstPeer(row, 'gateway, stdio server over HTTP (legacy): Albedo vs mcp-proxy', m.http!, m.mcpProxy!, 'mcp-proxy');
    }
  } finally {
    await closeAll(conns, procs);
  }
}

/** 2. An HTTP server: direct, through `albedo gateway --server NAME` (an HTTP entry), and through mcp-remote. */
async function httpServerRows(ctx: GatewayBenchContext, home: string, server: Proc, era: Era): Promise<void> {
  const { row, log } = ctx;
  log(`gateway: raw echo server (HTTP, ${era}): direct, albedo gateway --server, mcp-remote`);
  const conns: Record<string, BenchConn> = {};
  try {
    conns.direct = await sdkClient(era, { kind: 'http', url: server.url });
    conns.stdio = await viaStdioGateway(era, home, 'echo_http');
    const remote = {
      kind: 'stdio' as const,
      command: NODE,
      args: mcpRemoteArgs(server.url, era),
      env: peerEnv(path.join(ctx.home, 'peer-mr')),
    };
    conns.mcpRemote = await sdkClient(era, remote);
    const m = await measure(ctx, conns);
    againstDirect(
      row,
      `gateway, HTTP server (${era}): albedo gateway --server (stdio)`,
      m.stdio!,
      m.direct!,
      'direct, SDK client over HTTP',
    );
    const label = `mcp-remote --protocol ${era === 'modern' ? 'auto' : 'legacy'}`;
    againstPeer(row, `gateway, HTTP server over stdio (${era}): Albedo vs mcp-remote`, m.stdio!, m.mcpRemote!, label);
  } finally {
    await closeAll(conns, []);
  }
}

/**
 * 3. The first tools/list of the composed gateway `all` over `names` (their catalogues saved by the daemon that ran
 * the call rows), each time on a freshly started daemon; n supergateway and n mcp-proxy processes listed in parallel.
 */
async function composedRows(ctx: GatewayBenchContext, home: string, names: string[], server: string[]): Promise<void> {
  const { row, log } = ctx;
  const n = names.length;
  const { rounds } = sizes(ctx);
  log(`gateway: first tools/list of a composed gateway over ${n} servers with saved catalogues, vs ${n} peers in parallel`);
  const times: Record<'albedo' | 'supergateway' | 'mcpProxy', number[]> = { albedo: [], supergateway: [], mcpProxy: [] };
  const lists: number[] = [];
  const second: number[] = [];
  const peers: Record<'supergateway' | 'mcpProxy', Proc[]> = { supergateway: [], mcpProxy: [] };
  try {
    // Each peer fronts one server: n of each, started beforehand (their start-up is not timed, as the daemon's is not).
    for (const [k, start] of [
      ['supergateway', startSupergateway],
      ['mcpProxy', startMcpProxy],
    ] as const) {
      for (let i = 0; i < n; i += 5) {
        const batch = names.slice(i, i + 5).map((s) => start(server, path.join(ctx.home, `peer-${k}-${s}`)));
        peers[k].push(...(await Promise.all(batch)));
      }
    }
    for (let r = 0; r < rounds; r++) {
      const d = await startDaemon(home);
      try {
        const t0 = performance.now();
        const c = await viaHttpGateway('legacy', d, 'all');
        times.albedo.push(performance.now() - t0);
        lists.push(c.listMs);
        if (c.toolCount() < 2 * n) throw new Error(`the composed gateway listed ${c.toolCount()} tools, not ${2 * n}`);
        // A second host on the same daemon: the gateway's session is open, so this is the catalogue's answer alone.
        const t1 = performance.now();
        const c2 = await viaHttpGateway('legacy', d, 'all');
        second.push(performance.now() - t1);
        await c2.close();
        await c.close();
      } finally {
        await d.stop();
      }
      for (const k of ['supergateway', 'mcpProxy'] as const) {
        const t0 = performance.now();
        const cs = await Promise.all(peers[k].map((p) => sdkClient('legacy', { kind: 'http', url: p.url })));
        times[k].push(performance.now() - t0);
        await Promise.all(cs.map((c) => c.close()));
      }
    }
  } finally {
    await Promise.allSettled([...peers.supergateway, ...peers.mcpProxy].map((p) => p.stop()));
  }
  const scenario = `gateway, composed over ${n} servers with saved catalogues: connect + first tools/list, fresh daemon`;
  const a = median(times.albedo);
  row({ group: GROUP, scenario, unit: 'ms', albedo: a, peer: null, better: 'lower', target: '≤ 50 ms', targetAbs: 50 });
  row({
    group: GROUP,
    scenario: `${scenario}: of which the tools/list request`,
    unit: 'ms',
    albedo: median(lists),
    peer: null,
    better: 'lower',
  });
  row({
    group: GROUP,
    scenario: `gateway, composed over ${n} servers with saved catalogues: connect + tools/list of a second client, session open`,
    unit: 'ms',
    albedo: median(second),
    peer: null,
    better: 'lower',
  });
  for (const [k, label] of [
    ['supergateway', `${n} × supergateway --stateful, in parallel`],
    ['mcpProxy', `${n} × mcp-proxy, in parallel`],
  ] as const) {
    row({
      group: GROUP,
      scenario: `${scenario}, vs ${label}`,
      unit: 'ms',
      albedo: a,
      peer: median(times[k]),
      peerLabel: label,
      better: 'lower',
    });
  }
}

/** Opens (and closes) a session over every configured server: it waits for each one's discovery, which saves its catalogue. */
async function saveCatalogues(d: Running, atLeast: number): Promise<void> {
  const pool = new Pool(`http://127.0.0.1:${d.port}`, { connections: 1 });
  try {
    const headers = { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' };
    const r = await pool.request({ method: 'POST', path: '/v1/sessions', headers, body: '{}' });
    const s = (await r.body.json()) as { id: string; tools: number };
    if (!(s.tools >= atLeast)) throw new Error(`the first session has ${s.tools} tools, not ${atLeast}`);
    await (await pool.request({ method: 'DELETE', path: `/v1/sessions/${s.id}`, headers })).body.text();
  } finally {
    await pool.close();
  }
}

export async function gatewayRows(ctx: GatewayBenchContext): Promise<void> {
  const home = path.join(ctx.home, 'gateway');
  mkdirSync(home, { recursive: true });
  // The composed gateway's servers: two in --quick (the rows run; four peer processes, not forty).
  const names = Array.from({ length: ctx.quick ? 2 : ctx.P.many }, (_, k) => `s${String(k).padStart(2, '0')}`);
  const stdio = (era: Era) => [NODE, ctx.rawEchoJs, '--era', era];
  const v = await peerVersions();
  ctx.log(`gateway: peers supergateway ${v.supergateway}, mcp-proxy ${v['mcp-proxy']}, mcp-remote ${v['mcp-remote']}`);
  const httpServer = await startRawEchoHttp();
  try {
    writeHome(
      home,
      {
        echo_modern: stdio('modern'),
        echo_legacy: stdio('legacy'),
        echo_http: httpServer.url,
        ...Object.fromEntries(names.map((s) => [s, stdio('legacy')])),
      },
      { echo_modern: { server: 'echo_modern' }, echo_legacy: { server: 'echo_legacy' }, all: { servers: { include: names } } },
    );
    const d = await startDaemon(home);
    try {
      await saveCatalogues(d, 2 * names.length);
      const eras = ctx.quick ? (['legacy'] as const) : (['modern', 'legacy'] as const);
      for (const era of eras) await stdioServerRows(ctx, d, home, era);
      for (const era of eras) await httpServerRows(ctx, home, httpServer, era);
    } finally {
      await d.stop();
    }
    await composedRows(ctx, home, names, stdio('legacy'));
  } finally {
    await httpServer.stop();
  }
}
