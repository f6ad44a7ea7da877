/**
 * Bench rows for the daemon (issue 11): a call through the daemon's HTTP API
 * vs the same call embedded (`albedo.sessions` in-process), at p50 and at 32
 * in flight, and a session opened over HTTP with 50 saved catalogues. The
 * daemon is the real `albedo daemon` process on loopback, driven with undici
 * (keep-alive), as a harness in another language would drive it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { createAlbedo } from '../api/albedo.ts';
import { closeCatalogueStores } from '../services/catalogue/store.ts';
import { NODE, ROOT, concurrent, median, percentile, sequential, servers, type BenchConn } from './lib.ts';
import { manyOf, writeServers, type SessionBenchContext } from './sessions.ts';

const GROUP = 'daemon';

export interface Running {
  child: ChildProcess;
  port: number;
  token: string;
  stop(): Promise<void>;
}

export async function startDaemon(home: string): Promise<Running> {
  const env = { ...process.env, ALBEDO_HOME: home };
  const child = spawn(NODE, [path.join(ROOT, 'bin', 'albedo.ts'), 'daemon'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the daemon exited with ${code}`)));
    createInterface({ input: child.stderr! }).on('line', (l) => {
      if (l.includes('listening on')) resolve();
    });
  });
  const info = JSON.parse(readFileSync(path.join(home, 'daemon.json'), 'utf8')) as { port: number; token: string };
  return {
    child,
    port: info.port,
    token: info.token,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A session of the daemon behind the bench's connection interface: each call is one POST …/calls. */
async function httpSession(d: Running, pool: Pool): Promise<BenchConn & { id: string }> {
  const headers = { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' };
  const req = async (method: 'POST' | 'DELETE', p: string, body?: unknown): Promise<any> => {
    const r = await pool.request({ method, path: p, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.body.text();
    if (r.statusCode >= 300) throw new Error(`${method} ${p}: ${r.statusCode} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const s = await req('POST', '/v1/sessions', {});
  return {
    id: s.id,
    call: (name, args) => req('POST', `/v1/sessions/${s.id}/calls`, { name: `echo/${name}`, arguments: args }),
    toolCount: () => s.tools,
    close: () => req('DELETE', `/v1/sessions/${s.id}`),
  };
}

export async function daemonRows(ctx: SessionBenchContext): Promise<void> {
  const { P, row, log } = ctx;

  // 1. The same raw echo server, called through the daemon's API and embedded, alternating rounds.
  log('daemon: a call through the HTTP API vs embedded');
  {
    const home = path.join(ctx.home, 'daemon-call');
    writeServers(home, { echo: servers.rawStdio('modern') });
    const d = await startDaemon(home);
    const pool = new Pool(`http://127.0.0.1:${d.port}`, { connections: 32 });
    const embedded = await createAlbedo({ home: path.join(ctx.home, 'daemon-call-embedded'), transportWorkers: 2 });
    writeServers(path.join(ctx.home, 'daemon-call-embedded'), { echo: servers.rawStdio('modern') });
    try {
      const res: Array<Array<{ p50: number; rate: number }>> = [[], []];
      for (let r = 0; r < P.rounds; r++) {
        const conns: BenchConn[] = [
          await httpSession(d, pool),
          await (async () => {
            const s = await embedded.sessions.open();
            return {
              call: (n: string, a: Record<string, unknown>) => s.call(`echo/${n}`, a),
              toolCount: () => s.tools().length,
              close: () => s.close(),
            };
          })(),
        ];
        for (const [k, c] of conns.entries()) {
          await sequential(c, P.warm);
          const lat = await sequential(c, P.seq);
          res[k]!.push({ p50: percentile(lat, 50), rate: await concurrent(c, P.conc, 32) });
          await c.close();
        }
      }
      const [api, emb] = res as [(typeof res)[0], (typeof res)[0]];
      const p50 = [median(api.map((x) => x.p50)), median(emb.map((x) => x.p50))] as const;
      row({
        group: GROUP,
        scenario: 'call through the daemon API vs embedded (p50 latency)',
        unit: 'ms',
        albedo: p50[0],
        peer: p50[1],
        peerLabel: 'embedded session',
        better: 'lower',
      });
      row({
        group: GROUP,
        scenario: 'call through the daemon API: overhead over embedded at p50',
        unit: 'µs',
        albedo: (p50[0] - p50[1]) * 1000,
        peer: null,
        better: 'lower',
      });
      row({
        group: GROUP,
        scenario: 'call through the daemon API vs embedded, 32 in flight',
        unit: 'calls/s',
        albedo: median(api.map((x) => x.rate)),
        peer: median(emb.map((x) => x.rate)),
        peerLabel: 'embedded session',
        better: 'higher',
      });
    } finally {
      await pool.close();
      await d.stop();
      await embedded.close();
      await closeCatalogueStores();
    }
  }

  // 2. POST /v1/sessions with 50 saved catalogues (a first session saves them; each timed open is then closed).
  const n = P.sessions.saved;
  log(`daemon: session create over HTTP with ${n} saved catalogues`);
  {
    const home = path.join(ctx.home, 'daemon-open');
    writeServers(
      home,
      manyOf(n, () => servers.rawStdio('modern')),
    );
    const d = await startDaemon(home);
    const pool = new Pool(`http://127.0.0.1:${d.port}`, { connections: 4 });
    try {
      const seed = await httpSession(d, pool);
      await seed.close();
      const times: number[] = [];
      for (let r = 0; r < P.sessions.opens * Math.max(1, P.sessions.reopens); r++) {
        await new Promise((res) => setTimeout(res, P.sessions.quietMs));
        const t0 = performance.now();
        const s = await httpSession(d, pool);
        times.push(performance.now() - t0);
        if (s.toolCount() < 2 * n) throw new Error(`only ${s.toolCount()} tools advertised`);
        await s.close();
      }
      row({
        group: GROUP,
        scenario: `POST /v1/sessions, ${n} saved catalogues (p50)`,
        unit: 'ms',
        albedo: median(times),
        peer: null,
        better: 'lower',
        target: '≤ 20 ms',
        targetAbs: 20,
      });
    } finally {
      await pool.close();
      await d.stop();
    }
  }
}
