/**
 * Benchmark building blocks: the two clients behind one small interface
 * (Albedo through its public embedding API; the official
 * @modelcontextprotocol/client 2.4.0), the servers they are measured
 * against, and statistics.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createAlbedo, type AlbedoWithFaults } from '../api/albedo.ts';
import type { ServerConfigInput } from '../protocol/config.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const NODE = process.execPath;
const FIX = (f: string): string => path.join(ROOT, 'test', 'fixtures', f);
export const RAW_ECHO = path.join(ROOT, 'bench', 'servers', 'raw-echo.ts');

export type Era = 'modern' | 'legacy';

/**
 * Writes the raw echo server as plain JavaScript (`DIR/raw-echo.mjs`, types
 * stripped) and returns its path: the start-up and memory rows launch many
 * servers, and a compiled server does not load the type stripper in each.
 */
export function writeRawEchoJs(dir: string): string {
  const file = path.join(dir, 'raw-echo.mjs');
  // In a child with --no-warnings: Node 22 flags stripTypeScriptTypes as experimental, and the bench's output is its table.
  const strip =
    "process.stdout.write(require('node:module').stripTypeScriptTypes(require('node:fs').readFileSync(process.argv[1], 'utf8')))";
  const r = spawnSync(NODE, ['--no-warnings', '-e', strip, RAW_ECHO], { encoding: 'utf8' });
  if (r.status !== 0 || !r.stdout) throw new Error(`stripping the types of ${RAW_ECHO} failed: ${r.stderr}`);
  writeFileSync(file, r.stdout);
  return file;
}

/** A server to measure against: stdio (command) or HTTP (url). */
export type ServerSpec = { kind: 'stdio'; command: string; args: string[]; era: Era } | { kind: 'http'; url: string; era: Era };

export const servers = {
  sdkStdio: (era: Era): ServerSpec =>
    era === 'modern'
      ? { kind: 'stdio', command: NODE, args: [FIX('sdk-server.ts')], era }
      : { kind: 'stdio', command: NODE, args: [FIX('sdk1-server.ts')], era },
  rawStdio: (era: Era, extra: string[] = []): ServerSpec => ({
    kind: 'stdio',
    command: NODE,
    args: [RAW_ECHO, '--era', era, ...extra],
    era,
  }),
  /** The raw echo server compiled to JS by writeRawEchoJs. */
  rawJs: (file: string, era: Era = 'modern'): ServerSpec => ({ kind: 'stdio', command: NODE, args: [file, '--era', era], era }),
};

export interface BenchConn {
  call(name: string, args: Record<string, unknown>): Promise<unknown>;
  toolCount(): number;
  close(): Promise<void>;
}

export interface Impl {
  name: 'albedo' | 'sdk';
  connect(s: ServerSpec, opts?: { cachedEra?: boolean }): Promise<BenchConn>;
  close(): Promise<void>;
}

/**
 * Albedo, measured through createAlbedo/connect/callTool like any embedder.
 * The kernel's workers are started (and their modules loaded) before it is
 * handed out: a daemon pays that once, not per connection. Fault injection is
 * on for its test-only methods (`kernel/echo` here and in the hop rows,
 * `worker/stats` in bench/child.ts); it adds one lookup per call to a worker.
 */
export async function albedoImpl(home: string | null): Promise<Impl & { albedo: AlbedoWithFaults }> {
  const albedo = await createAlbedo({ home, transportWorkers: 2, faults: true });
  await Promise.all([0, 1, 2, 3].map(() => albedo.faults.echo('transport', null)));
  return {
    name: 'albedo',
    albedo,
    async connect(s) {
      const cfg: ServerConfigInput =
        s.kind === 'stdio'
          ? { command: s.command, args: s.args, callTimeoutMs: 120_000, startupTimeoutMs: 120_000 }
          : { url: s.url, callTimeoutMs: 120_000, startupTimeoutMs: 120_000 };
      const c = await albedo.connect(cfg);
      return {
        call: (name, args) => c.callTool(name, args),
        toolCount: () => c.catalogue.tools.length,
        close: () => c.close(),
      };
    },
    close: () => albedo.close(),
  };
}

/**
 * The official SDK client: versionNegotiation 'auto' for modern servers,
 * 'legacy' for legacy ones (as the issue asks); `cachedEra` hands it the
 * legacy verdict the host would have cached (`prior`), so its reconnect is
 * measured with the same knowledge Albedo's cache gives.
 */
export function sdkImpl(): Impl {
  return {
    name: 'sdk',
    async connect(s, opts = {}) {
      const client = new Client(
        { name: 'bench-peer', version: '1.0.0' },
        { versionNegotiation: { mode: s.era === 'modern' ? 'auto' : 'legacy' } },
      );
      const transport =
        s.kind === 'stdio'
          ? // Its default line buffer is smaller than the 16 MiB messages Albedo accepts: raise it for a fair large-payload row.
            new StdioClientTransport({ command: s.command, args: s.args, stderr: 'ignore', maxBufferSize: 32 * 2 ** 20 })
          : new StreamableHTTPClientTransport(new URL(s.url));
      await client.connect(transport, opts.cachedEra && s.era === 'legacy' ? { prior: { kind: 'legacy' } } : undefined);
      // A host discovers the whole catalogue on connect, as Albedo does: every page of every list the server offers.
      const caps = client.getServerCapabilities() ?? {};
      const all = async <T>(
        fetch: (cursor?: string) => Promise<{ nextCursor?: string } & Record<string, unknown>>,
        field: string,
      ): Promise<T[]> => {
        const items: T[] = [];
        let cursor: string | undefined;
        do {
          const page = await fetch(cursor);
          items.push(...(page[field] as T[]));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return items;
      };
      const arg = (cursor?: string) => (cursor === undefined ? undefined : { cursor });
      const [tools] = await Promise.all([
        caps.tools ? all((c) => client.listTools(arg(c)), 'tools') : Promise.resolve([]),
        caps.resources ? all((c) => client.listResources(arg(c)), 'resources') : Promise.resolve([]),
        caps.resources ? all((c) => client.listResourceTemplates(arg(c)), 'resourceTemplates').catch(() => []) : Promise.resolve([]),
        caps.prompts ? all((c) => client.listPrompts(arg(c)), 'prompts') : Promise.resolve([]),
      ]);
      const count = tools.length;
      return {
        call: (name, args) => client.callTool({ name, arguments: args }, { timeout: 120_000 }),
        toolCount: () => count,
        close: () => client.close(),
      };
    },
    close: async () => {},
  };
}

/** Starts an HTTP fixture (prints `listening URL`) and returns its URL and a stop function. */
export async function startHttp(script: string, args: string[]): Promise<{ url: string; stop(): void }> {
  const child = spawn(NODE, [FIX(script), ...args], { stdio: ['pipe', 'pipe', 'ignore'] });
  const rl = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
    rl.on('line', (l) => {
      const m = /^listening (\S+)$/.exec(l);
      if (m) resolve(m[1]!);
    });
  });
  return {
    url,
    stop: () => {
      child.stdin!.end();
      child.kill('SIGKILL');
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function median(xs: number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
}

/** `n` sequential calls: per-call latency in ms, sorted. */
export async function sequential(conn: BenchConn, n: number, args: Record<string, unknown> = { text: 'hello' }): Promise<number[]> {
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await conn.call('echo', args);
    lat.push(performance.now() - t0);
  }
  return lat.sort((a, b) => a - b);
}

/** `n` calls with `inFlight` outstanding at any time: calls per second. */
export async function concurrent(conn: BenchConn, n: number, inFlight: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++;
      await conn.call('echo', { text: 'hello' });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return n / ((performance.now() - t0) / 1000);
}
