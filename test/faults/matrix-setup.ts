// The fault matrix's shared setup (issue 25 item 4): a home with ten real
// servers (three of them `share: true`), ten sessions over them, and a call
// in flight on every server that has a long-running tool. Each session
// composes the three shared servers and one server of its own, so the matrix
// runs 13 server processes, not 100, on a loaded 2-core machine. The counted
// servers (test/fixtures/counted-server.ts) log each call by id, so a test
// tells a call sent once from one sent again (a silent retry).
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createAlbedo, type Albedo, type AlbedoOptions } from '../../api/albedo.ts';
import type { AlbedoSession } from '../../api/sessions.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { EVERYTHING, ROOT, fixture, taggedPids, waitNoLeftovers } from '../helpers.ts';
import { readLog } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';

type Tap = { teardown(fn: () => unknown): void };

export const SHARED = ['s1', 's2', 's3'] as const;
export const OWN = ['c1', 'c2', 'c3', 'sdk', 'sdk1', 'everything', 'fs'] as const;
export const COUNTED = ['s1', 's2', 's3', 'c1', 'c2', 'c3'] as const;
export const FILESYSTEM = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
export const SESSIONS = 10;

/** The server of its own session `i` composes (beside the shared ones). */
export const ownOf = (i: number): string => OWN[i % OWN.length]!;
export const logOf = (logs: string, server: string): string => path.join(logs, `${server}.log`);

/**
 * The ten entries of the matrix's extensions.json. `stdio(script, args)` makes one entry (tagged by the caller's
 * way: sessionHome's secret file, or the daemon harness's named secret); `logs` is where the counted servers log.
 */
export function matrixServers(
  stdio: (script: string, args: string[]) => Record<string, unknown>,
  logs: string,
  dataDir: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of SHARED) out[s] = { ...stdio(fixture('counted-server.ts'), [logOf(logs, s)]), share: true };
  for (const s of ['c1', 'c2', 'c3']) out[s] = stdio(fixture('counted-server.ts'), [logOf(logs, s)]);
  out.sdk = stdio(fixture('sdk-server.ts'), []);
  out.sdk1 = stdio(fixture('sdk1-server.ts'), []);
  out.everything = stdio(EVERYTHING, ['stdio']);
  out.fs = stdio(FILESYSTEM, [dataDir]);
  return out;
}

/** What a call in flight came to. */
export interface Landed {
  server: string;
  session: number;
  /** The counted servers' call id (undefined for the others). */
  id?: string;
  /** The id of the session's connection to the server when the call was sent. */
  connection: string | undefined;
  result: Promise<{ ok: true; value: unknown } | { ok: false; err: AlbedoError }>;
}

const settle = (p: Promise<unknown>): Landed['result'] =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => {
      if (AlbedoError.is(err)) return { ok: false as const, err };
      throw err;
    },
  );

/** The arguments of a long call to `server`, or undefined for a server without one (fs). */
function longCall(server: string, ms: number, id: string): [string, Record<string, unknown>] | undefined {
  if ((COUNTED as readonly string[]).includes(server)) return ['sleep', { ms, id }];
  if (server === 'sdk' || server === 'sdk1') return ['sleep', { ms }];
  if (server === 'everything') return ['trigger-long-running-operation', { duration: Math.ceil(ms / 1000), steps: 2 }];
  return undefined;
}

/**
 * A call of `ms` in flight from every session to its shared server (s1, s2, s3 in turn) and to its own (but fs,
 * which has no long tool): 10 + 9 calls, every server but fs reached. `round` keeps the ids of two rounds apart.
 */
export function callsInFlight(sessions: AlbedoSession[], ms: number, round = 'r1'): Landed[] {
  const out: Landed[] = [];
  sessions.forEach((s, i) => {
    for (const server of [SHARED[i % SHARED.length]!, ownOf(i)]) {
      const id = `${round}-${i}-${server}`;
      const call = longCall(server, ms, id);
      if (!call) continue;
      const counted = (COUNTED as readonly string[]).includes(server);
      out.push({
        server,
        session: i,
        id: counted ? id : undefined,
        connection: s.connectionOf(server),
        result: settle(s.call(toolOf(s, server, call[0]), call[1], { timeoutMs: 120_000 })),
      });
    }
  });
  return out;
}

/** How many times the counted server `server` received the call `id`. */
export const timesSent = (logs: string, server: string, id: string): number =>
  readLog(logOf(logs, server)).filter((e) => e.event === 'call' && e.id === id).length;

/** What must not change where nothing changed: each session's id, generation and tool names. */
export const shapeOf = (sessions: AlbedoSession[]): Array<{ id: string; generation: number; tools: string[] }> =>
  sessions.map((s) => ({ id: s.id, generation: s.generation, tools: s.tools().map((x) => x.name) }));

/** Resolves when the next `service/restarted` of `service` arrives. */
export function restarted(albedo: Albedo, service: string): Promise<void> {
  return new Promise((resolve) => {
    const off = albedo.kernel.on('kernel', 'service/restarted', (e) => {
      if (e.service === service) {
        off();
        resolve();
      }
    });
  });
}

/** The tagged processes whose command line names `script`. */
export const pidsOf = (tag: string, script: string): number[] =>
  taggedPids(tag).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script);
    } catch {
      return false;
    }
  });

export const inflight = (albedo: Albedo, service: string): number =>
  albedo.kernel.slots(service as never).reduce((n, s) => n + s.inflight, 0);

export interface Matrix {
  tag: string;
  home: string;
  logs: string;
  albedo: Albedo;
  sessions: AlbedoSession[];
}

/**
 * The matrix: a home with the ten servers, an instance with fault injection (`opts` added: supervision, …), ten
 * sessions opened and every server dialled. Torn down with the no-leftover check.
 */
export async function openMatrix(t: Tap, tag: string, opts: AlbedoOptions = {}): Promise<Matrix> {
  const h = sessionHome(t, tag);
  const logs = path.join(h.dir, 'logs');
  const data = path.join(h.dir, 'data');
  mkdirSync(logs);
  mkdirSync(data);
  h.write(matrixServers((script, args) => h.stdio(script, args), logs, data));
  const albedo = await createAlbedo({ home: h.dir, transportWorkers: 2, faults: true, ...opts });
  t.teardown(async () => {
    await albedo.close();
    const left = await waitNoLeftovers(tag, 20_000);
    if (left.length) throw new Error(`processes outlived the test: ${left.join(', ')}`);
  });
  const sessions: AlbedoSession[] = [];
  for (let i = 0; i < SESSIONS; i++) sessions.push(await albedo.sessions.open({ servers: { include: [...SHARED, ownOf(i)] } }));
  for (const s of sessions) await s.idle();
  return { tag, home: h.dir, logs, albedo, sessions };
}
