/**
 * The soak driver (issue 25 item 5), for the bench's `soak` group
 * (soakRows, bench/soak-plot.ts draws it) and test/soak/soak.test.ts: an
 * in-process createAlbedo over a home of real stdio servers, some `share:
 * true` and some per session, run in rounds of
 *
 * - churn: `churn` sessions closed and as many opened;
 * - calls: `calls` calls (echo; and whoami with `signIn`), every open session calling its servers in turn, all at once;
 * - a list_changed storm: `storm` `set_tools` calls on the shared
 *   test/fixtures/composer-changing-server.ts (its tool list toggles, each
 *   announced to every session holding it);
 * - a crash, every `crashEvery` rounds, after the round's sample: SIGKILL of
 *   a random server process; the next round's calls to it bring it back;
 * - sign-in expiry, with `signIn`: a shared HTTP server behind a real OAuth
 *   authorization server (bench/soak-sign-in.ts), signed in once before the
 *   rounds, its access tokens living `accessTokenTtl` seconds; its `whoami` is
 *   among every session's calls, and a round's calls start no sooner than one
 *   token lifetime after the last round's ended, so the token Albedo holds has
 *   expired by then, every round, and Albedo must refresh it (no new sign-in);
 *
 * and sampled after each round's calls and storm (the main isolate GC'd first: gc is exposed if it was not):
 * process RSS and heap (process.memoryUsage), the transport workers' heaps, open fds (/proc/self/fd),
 * server processes and all processes started (launchers included; the OAuth stack's process left out), the
 * LMDB store's size ($ALBEDO_HOME/store), calls so far and calls that failed, and with `signIn` the token
 * endpoint's refresh and authorization-code grants so far and the signed-in server's calls and failures.
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createAlbedo, type AlbedoWithFaults } from '../api/albedo.ts';
import type { AlbedoSession } from '../api/sessions.ts';
import { closeCatalogueStores } from '../services/catalogue/store.ts';
import { NODE, ROOT } from './proc.ts';
import { SIGNED_IN, signInOnce, signedInConfig, startOAuthProcess, type OAuthProcess } from './soak-sign-in.ts';
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
  /** Calls per round (echo, and the signed-in server's whoami), over every open session. */
  calls: number;
  /** Sessions closed and opened per round. */
  churn: number;
  /** set_tools calls per round. */
  storm: number;
  /** A server process SIGKILLed every this many rounds (0: never). */
  crashEvery: number;
  /** Test hook, to show the bounds can fail: churned sessions are left open instead of closed. */
  leakSessions?: boolean;
  /**
   * Sign-in expiry: a shared OAuth-protected HTTP server, signed in once, whose access tokens live
   * `accessTokenTtl` seconds. `revokeAfterRound` is a test hook, to show the checks can fail: after
   * that round's sample the authorization server forgets every refresh token, so the next refresh is refused.
   */
  signIn?: { accessTokenTtl: number; revokeAfterRound?: number };
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
  /** With `signIn` (else 0): refresh_token grants at the token endpoint so far (refused ones included). */
  refreshGrants: number;
  /** With `signIn` (else 0): authorization_code grants so far; the one sign-in before the rounds is 1. */
  codeGrants: number;
  /** With `signIn` (else 0): `whoami` calls to the signed-in server so far, and those that failed. */
  signedInCalls: number;
  signedInFailed: number;
  /** Failed calls so far by their error's code (`signed-in ` before the signed-in server's). */
  failures: Record<string, number>;
  seconds: number;
}

export interface SoakResult {
  samples: SoakSample[];
  /** Server processes expected with `sessions` sessions open: the shared ones once, the per-session ones per session. */
  expectedServers: number;
  /** Server processes and all processes left once every session is closed (waited for, bounded). */
  afterClose: { servers: number; processes: number };
  /** With `signIn`: the signed-in server's sign-in state after the rounds (`signed_in` while its refreshes held). */
  signInAtEnd?: string;
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

/** A call the rounds make: a server's tool and its arguments. */
type Target = { server: string; tool: string; args: Record<string, unknown> };

function writeSoakHome(o: SoakOptions, signedInUrl: string | undefined): Target[] {
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
  if (signedInUrl !== undefined) servers[SIGNED_IN] = signedInConfig(signedInUrl);
  writeFileSync(path.join(o.home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));
  const targets: Target[] = echo.map((server) => ({ server, tool: 'echo', args: { text: 'soak' } }));
  if (signedInUrl !== undefined) targets.push({ server: SIGNED_IN, tool: 'whoami', args: {} });
  return targets;
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

/** Runs the soak; every session is closed, the instance too, and the OAuth stack stopped before it resolves. */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const stack = o.signIn ? await startOAuthProcess(o.signIn.accessTokenTtl) : undefined;
  try {
    return await soakWith(o, stack);
  } finally {
    await stack?.close();
  }
}

async function soakWith(o: SoakOptions, stack: OAuthProcess | undefined): Promise<SoakResult> {
  const gc = gcOf();
  const log = o.log ?? ((): void => {});
  const targets = writeSoakHome(o, stack?.mcpUrl);
  // The OAuth stack's process is not one of Albedo's: left out of every count, never crashed.
  const servers = (): number[] => serverPids().filter((p) => p !== stack?.pid);
  const processes = (): number[] => descendants().filter((p) => p !== stack?.pid);
  // Fault injection on for its `worker/stats` alone (the workers' heaps); no fault is injected.
  const albedo = await createAlbedo({ home: o.home, transportWorkers: 2, faults: true });
  const open: AlbedoSession[] = [];
  const leaked: AlbedoSession[] = [];
  const samples: SoakSample[] = [];
  let calls = 0;
  let failed = 0;
  let signedInCalls = 0;
  let signedInFailed = 0;
  /** Failed calls by their error's code (the signed-in server's marked), so far. */
  const failures: Record<string, number> = {};
  let flip = false;
  const t0 = performance.now();
  const call = async (s: AlbedoSession, server: string, tool: string, args: Record<string, unknown>): Promise<void> => {
    calls++;
    if (server === SIGNED_IN) signedInCalls++;
    try {
      const name = toolName(s, server, tool);
      if (!name) throw new Error(`${server}/${tool} not advertised`);
      await s.call(name, args);
    } catch (err) {
      failed++;
      if (server === SIGNED_IN) signedInFailed++;
      const code = `${server === SIGNED_IN ? 'signed-in ' : ''}${(err as { code?: unknown }).code ?? 'not advertised'}`;
      if (!failures[code]) log(`  soak: first ${code}: ${(err as Error).message}`);
      failures[code] = (failures[code] ?? 0) + 1;
    }
  };
  // When the last round's calls ended: the next round's start no sooner than a token lifetime later.
  let callsEnded = performance.now();
  try {
    if (stack) await signInOnce(albedo, stack.mcpUrl);
    callsEnded = performance.now();
    while (open.length < o.sessions) open.push(await openReady(albedo));
    for (let round = 1; round <= o.rounds; round++) {
      // Churn: the oldest sessions leave, new ones come.
      for (let k = 0; k < o.churn; k++) {
        const gone = open.shift()!;
        if (o.leakSessions) leaked.push(gone);
        else await gone.close();
        open.push(await openReady(albedo));
      }
      // Sign-in expiry: the access token Albedo holds (obtained at the latest during the last round's calls) has expired.
      if (o.signIn) await pause(Math.max(0, callsEnded + o.signIn.accessTokenTtl * 1000 + 100 - performance.now()));
      // Calls: every session in a loop over its servers (the signed-in one's whoami among them), all at once.
      const each = Math.ceil(o.calls / open.length);
      await Promise.all(
        open.map(async (s, i) => {
          for (let c = 0; c < each; c++) {
            const to = targets[(i + c) % targets.length]!;
            await call(s, to.server, to.tool, to.args);
          }
        }),
      );
      callsEnded = performance.now();
      // A list_changed storm on the shared changing server.
      for (let k = 0; k < o.storm; k++) {
        flip = !flip;
        await call(open[k % open.length]!, CHANGING, 'set_tools', { names: flip ? ['alpha', 'beta'] : ['alpha'] });
      }
      await pause(200);
      // The last round: the processes of the sessions churned out are given time to exit (a launcher's grace is 2 s).
      const settle = Date.now() + (round === o.rounds ? 10_000 : 0);
      while (servers().length !== 1 + o.shared + o.sessions * o.perSession && Date.now() < settle) await pause(100);
      gc();
      const m = process.memoryUsage();
      let workerHeap = 0;
      for (const slot of albedo.kernel.slots('transport')) {
        if (slot.keys.length === 0) continue;
        workerHeap += (await albedo.faults.stats('transport', { gc: true }, { key: slot.keys[0]! })).heapUsed;
      }
      const grants = stack ? (await stack.stats()).tokenRequests : {};
      const sample: SoakSample = {
        round,
        rssMb: m.rss / 2 ** 20,
        heapMb: m.heapUsed / 2 ** 20,
        workerHeapMb: workerHeap / 2 ** 20,
        fds: fdCount(process.pid),
        servers: servers().length,
        processes: processes().length,
        lmdbMb: sizeOf(path.join(o.home, 'store')) / 2 ** 20,
        calls,
        failed,
        refreshGrants: grants.refresh_token ?? 0,
        codeGrants: grants.authorization_code ?? 0,
        signedInCalls,
        signedInFailed,
        failures: { ...failures },
        seconds: (performance.now() - t0) / 1000,
      };
      samples.push(sample);
      log(`  soak round ${round}: ${JSON.stringify(sample)}`);
      if (stack && round === o.signIn?.revokeAfterRound) await stack.revokeRefreshTokens();
      // A crash, after the sample: the next round's calls to that server dial it again.
      if (o.crashEvery > 0 && round % o.crashEvery === 0 && round < o.rounds) {
        const pids = servers();
        const victim = pids[Math.floor(Math.random() * pids.length)];
        if (victim !== undefined) process.kill(victim, 'SIGKILL');
      }
    }
  } catch (err) {
    await albedo.close().catch(() => {});
    throw err;
  } finally {
    for (const s of [...open, ...leaked]) await s.close().catch(() => {});
  }
  // Every session closed: no server may outlive them (waited for, bounded: a launcher's grace is 2 s).
  const end = Date.now() + 15_000;
  while (servers().length > 0 && Date.now() < end) await pause(100);
  const afterClose = { servers: servers().length, processes: processes().length };
  const signInAtEnd = stack
    ? (await albedo.authStatus(signedInConfig(stack.mcpUrl) as Parameters<AlbedoWithFaults['authStatus']>[0], { name: SIGNED_IN })).state
    : undefined;
  await albedo.close();
  await closeCatalogueStores();
  return { samples, expectedServers: 1 + o.shared + o.sessions * o.perSession, afterClose, signInAtEnd };
}
