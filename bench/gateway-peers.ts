/**
 * What bench/gateway.ts measures Albedo's gateways beside: the official SDK
 * client 2.x, direct to a server or through a front, and the peers that
 * front one server — supergateway and mcp-proxy (a stdio server served over
 * Streamable HTTP) and mcp-remote (a Streamable HTTP server served over
 * stdio) — each run from node_modules as its own process, on loopback only.
 * Their environment points every proxy variable at a closed loopback port
 * and their home and config directories at a temporary one, so they keep
 * out of the user's files and a proxy-aware request for anywhere else goes
 * nowhere (none was seen: an strace of a --quick run found connections and
 * binds to 127.0.0.1 only).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NODE, ROOT, type BenchConn } from './lib.ts';

export const MODERN = '2026-07-28';
export type Era = 'modern' | 'legacy';

const NM = path.join(ROOT, 'node_modules');
export const PEER_BIN = {
  supergateway: path.join(NM, 'supergateway', 'dist', 'index.js'),
  mcpProxy: path.join(NM, 'mcp-proxy', 'dist', 'bin', 'mcp-proxy.mjs'),
  mcpRemote: path.join(NM, 'mcp-remote', 'dist', 'proxy.js'),
};
export const RAW_ECHO_HTTP = path.join(ROOT, 'bench', 'servers', 'raw-echo-http.ts');
const LOOPBACK_ONLY = path.join(ROOT, 'bench', 'servers', 'loopback-only.ts');

/** The peers' versions, as installed (the report names them). */
export async function peerVersions(): Promise<Record<string, string>> {
  const v = async (p: string): Promise<string> =>
    ((await import(path.join(NM, p, 'package.json'), { with: { type: 'json' } })) as { default: { version: string } }).default.version;
  return { supergateway: await v('supergateway'), 'mcp-proxy': await v('mcp-proxy'), 'mcp-remote': await v('mcp-remote') };
}

/**
 * The environment a peer runs in: its own HOME and config directory (mcp-remote keeps OAuth state under
 * MCP_REMOTE_CONFIG_DIR), every proxy variable at a closed loopback port with loopback exempt, telemetry off.
 */
export function peerEnv(dir: string): Record<string, string> {
  mkdirSync(dir, { recursive: true });
  const nowhere = 'http://127.0.0.1:9';
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'LANG', 'TZ']) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  return {
    ...env,
    HOME: dir,
    XDG_CONFIG_HOME: dir,
    MCP_REMOTE_CONFIG_DIR: dir,
    HTTP_PROXY: nowhere,
    HTTPS_PROXY: nowhere,
    http_proxy: nowhere,
    https_proxy: nowhere,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    DO_NOT_TRACK: '1',
    NODE_ENV: 'production',
  };
}

/** A port free on 127.0.0.1 now (for a peer that takes a port and does not say which one it got). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

export interface Proc {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** The peers running now: a bench that ends by an error kills them on its way out (their servers see stdin end). */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live)
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      /* gone already */
    }
});

/** Starts a peer in a process group of its own (its servers with it), kept in `live` until it exits. */
function spawnPeer(args: string[], dir: string): ChildProcess {
  const child = spawn(NODE, args, { env: peerEnv(dir), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  // Both peers spawn their server in a group of its own or through a shell: a group kill reaps the server too.
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    child.kill('SIGTERM');
  }
  const t = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }, 3_000);
  await exited;
  clearTimeout(t);
}

/** Waits until `url`'s port accepts a connection (the peers print their own banners, in words that change). */
async function untilListening(child: ChildProcess, url: string, what: string): Promise<void> {
  const { port } = new URL(url);
  const deadline = Date.now() + 60_000;
  let out = '';
  child.stderr?.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-2_000)));
  child.stdout?.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-2_000)));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}): ${out}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(Number(port), '127.0.0.1', () => (s.end(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen within 60 s: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * supergateway fronting a stdio server over Streamable HTTP, stateful: a server process per 2025-era session (its
 * stateless mode, and every 2026-07-28 request, spawns one per request).
 */
export async function startSupergateway(serverCmd: string[], dir: string): Promise<Proc> {
  const port = await freePort();
  const args = ['--import', LOOPBACK_ONLY, PEER_BIN.supergateway, '--stdio', serverCmd.join(' ')];
  args.push('--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), '--logLevel', 'none');
  const child = spawnPeer(args, dir);
  const url = `http://127.0.0.1:${port}/mcp`;
  await untilListening(child, url, 'supergateway');
  return { child, url, stop: () => stopChild(child) };
}

/** mcp-proxy fronting a stdio server over Streamable HTTP only, bound to 127.0.0.1, sessions as by default. */
export async function startMcpProxy(serverCmd: string[], dir: string): Promise<Proc> {
  const port = await freePort();
  const args = [PEER_BIN.mcpProxy, '--host', '127.0.0.1', '--port', String(port), '--server', 'stream', '--', ...serverCmd];
  const child = spawnPeer(args, dir);
  const url = `http://127.0.0.1:${port}/mcp`;
  await untilListening(child, url, 'mcp-proxy');
  return { child, url, stop: () => stopChild(child) };
}

/** The raw echo server over HTTP (bench/servers/raw-echo-http.ts). */
export async function startRawEchoHttp(): Promise<Proc> {
  const child = spawn(NODE, [RAW_ECHO_HTTP], { stdio: ['pipe', 'pipe', 'ignore'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`raw-echo-http exited (${code})`)));
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = /^listening (\S+)$/.exec(l);
      if (m) resolve(m[1]!);
    });
  });
  return {
    child,
    url,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin!.end();
      await exited;
    },
  };
}

/** mcp-remote's command line for `url`: HTTP only, no log lines, its era pass-through (`--protocol legacy`) or `auto`. */
export function mcpRemoteArgs(url: string, era: Era): string[] {
  return [PEER_BIN.mcpRemote, url, '--transport', 'http-only', '--silent', '--protocol', era === 'modern' ? 'auto' : 'legacy'];
}

/** The official SDK client 2.x in one era (pinned to 2026-07-28, or legacy), connected over `transport`. */
export async function sdkClient(
  era: Era,
  transport:
    { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string> } | { kind: 'http'; url: string; token?: string },
): Promise<BenchConn & { client: Client; listMs: number }> {
  const client = new Client(
    { name: 'bench-gateway', version: '1.0.0' },
    { versionNegotiation: { mode: era === 'modern' ? { pin: MODERN } : 'legacy' } },
  );
  const t =
    transport.kind === 'stdio'
      ? new StdioClientTransport({ command: transport.command, args: transport.args, env: transport.env, stderr: 'ignore' })
      : new StreamableHTTPClientTransport(new URL(transport.url), {
          requestInit: transport.token ? { headers: { authorization: `Bearer ${transport.token}` } } : undefined,
          fetch: ownSignal,
        });
  await client.connect(t);
  const t0 = performance.now();
  const tools = (await client.listTools()).tools.length;
  const listMs = performance.now() - t0;
  return {
    client,
    listMs,
    call: (name, args) => client.callTool({ name, arguments: args }, { timeout: 120_000 }),
    toolCount: () => tools,
    // A 2025-era HTTP client ends its session (DELETE), so a peer that keeps a server process per session reaps it.
    close: async () => {
      if (t instanceof StreamableHTTPClientTransport) await t.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/**
 * The SDK's HTTP transport hands one long-lived AbortSignal to every fetch; undici adds an abort listener to it per
 * request and drops it only when the request is collected, so past 1,500 requests in flight or not yet collected
 * Node prints a MaxListenersExceededWarning (with a stack) per request, in the bench's process, for every HTTP path
 * alike. Each fetch gets a signal of its own that follows the transport's (AbortSignal.any holds no listener on it).
 */
const ownSignal: typeof fetch = (url, init) => fetch(url, init?.signal ? { ...init, signal: AbortSignal.any([init.signal]) } : init);
