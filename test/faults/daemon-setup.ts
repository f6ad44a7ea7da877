// The fault matrix's daemon rows (issue 25 item 4): the matrix of
// matrix-setup.ts (ten servers, three shared; ten sessions; calls in flight)
// served by a real `albedo daemon` process, which a test kills with SIGKILL
// mid-operation. After each kill: no server outlives it, every row of every
// LMDB table of $ALBEDO_HOME/store parses, extensions.json and creds.json
// parse; the next daemon restores the sessions.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import type { Test } from 'tap';
import { NODE, tempHome, waitNoLeftovers } from '../helpers.ts';
import { Agent } from 'undici';
import { call, entry, startDaemon, type Daemon } from '../daemon/harness.ts';
import { COUNTED, SESSIONS, SHARED, matrixServers, ownOf, timesSent } from './matrix-setup.ts';

export interface DaemonMatrix {
  tag: string;
  home: string;
  logs: string;
  d: Daemon;
  ids: string[];
}

/** A stdio entry for the daemon: tagged through its TEST_SERVER_TAG. */
export const daemonEntry = (script: string, args: string[] = []): Record<string, unknown> => entry(NODE, [script, ...args]);

/** The home (the ten servers, and `extra` ones no session composes), a daemon over it, and the ten sessions opened through its API. */
export async function daemonMatrix(t: Test, tag: string, extra: Record<string, unknown> = {}): Promise<DaemonMatrix> {
  const home = tempHome(t);
  const logs = path.join(home, 'logs');
  mkdirSync(logs);
  mkdirSync(path.join(home, 'data'));
  const servers = { ...matrixServers(daemonEntry, logs, path.join(home, 'data')), ...extra };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));
  const d = await startDaemon(t, home, { tag });
  const ids: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const r = await d.call('POST', '/v1/sessions', { body: { servers: { include: [...SHARED, ownOf(i)] } } });
    if (r.status !== 201) throw new Error(`open ${i}: ${r.status} ${r.text}`);
    ids.push(r.body.id);
  }
  return { tag, home, logs, d, ids };
}

export interface Shape {
  id: string;
  generation: number;
  tools: string[];
}

/** Each session's id, generation and tool names, as the daemon gives them. */
export async function shapeOf(d: Daemon, ids: string[]): Promise<Array<Shape | number>> {
  return Promise.all(
    ids.map(async (id) => {
      const r = await d.call('GET', `/v1/sessions/${id}/tools`);
      return r.status === 200 ? { id, generation: r.body.generation, tools: r.body.tools.map((x: { name: string }) => x.name) } : r.status;
    }),
  );
}

/** What an HTTP call in flight came to: its status, or the transport error's code (the daemon died under it). */
export interface HttpLanded {
  server: string;
  id?: string;
  result: Promise<string>;
}

/**
 * A long call from every session to its shared server and to its own (but fs), through POST /v1/sessions/{id}/calls,
 * each on a connection of its own (the harness's agent keeps 16, which the test's other requests need). Resolves once
 * every counted call reached its server.
 */
export async function httpCalls(t: Test, m: DaemonMatrix, ms: number, round: string): Promise<HttpLanded[]> {
  const agent = new Agent({ connections: 64 });
  t.teardown(() => agent.destroy());
  const out: HttpLanded[] = [];
  m.ids.forEach((sid, i) => {
    for (const server of [SHARED[i % SHARED.length]!, ownOf(i)]) {
      const id = `${round}-${i}-${server}`;
      const counted = (COUNTED as readonly string[]).includes(server);
      const body =
        server === 'everything'
          ? { name: `${server}/trigger-long-running-operation`, arguments: { duration: Math.ceil(ms / 1000), steps: 2 } }
          : server === 'fs'
            ? undefined
            : { name: `${server}/sleep`, arguments: counted ? { ms, id } : { ms }, timeoutMs: 120_000 };
      if (!body) continue;
      const result = call(m.d.info, 'POST', `/v1/sessions/${sid}/calls`, { body, dispatcher: agent }).then(
        (r) => String(r.status),
        (err: { code?: string }) => err.code ?? 'error',
      );
      out.push({ server, id: counted ? id : undefined, result: result.then((r) => `${server}:${r}`) });
    }
  });
  const arrived = (c: HttpLanded): boolean => c.id === undefined || timesSent(m.logs, c.server, c.id) === 1;
  const end = Date.now() + 60_000;
  while (!out.every(arrived) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  if (!out.every(arrived)) throw new Error('the calls did not reach their servers');
  return out;
}

/** Every row of the three LMDB tables parses: JSON text catalogues, msgpack session records and era verdicts. */
export async function storeRows(home: string): Promise<{ catalogues: number; sessions: number; verdicts: number; bad: string[] }> {
  const store = path.join(home, 'store');
  const bad: string[] = [];
  const out = { catalogues: 0, sessions: 0, verdicts: 0, bad };
  if (!existsSync(store)) return out;
  const root = open({ path: store, compression: false, maxDbs: 16 });
  try {
    for (const { key, value } of root
      .openDB<string, string>({ name: 'mcp_catalogues', compression: true, encoding: 'string' })
      .getRange()) {
      out.catalogues++;
      try {
        const row = JSON.parse(value) as { v?: unknown };
        if (typeof row !== 'object' || row === null || typeof row.v !== 'number') bad.push(`mcp_catalogues ${String(key)}: not a row`);
      } catch {
        bad.push(`mcp_catalogues ${String(key)}: not JSON`);
      }
    }
    for (const { key, value } of root.openDB<Record<string, unknown>, string>({ name: 'mcp_sessions' }).getRange()) {
      out.sessions++;
      // A session record, or an owner's ledger of connection ids (`<owner>\n~ledger`).
      const ledger = String(key).endsWith('\n~ledger');
      const ok = typeof value === 'object' && value !== null && typeof value.v === 'number';
      if (!ok || (ledger ? !Array.isArray(value.ids) : typeof value.id !== 'string')) bad.push(`mcp_sessions ${String(key)}: not a row`);
    }
    for (const { key, value } of root.openDB<Record<string, unknown>, string>({ name: 'era_verdicts' }).getRange()) {
      out.verdicts++;
      if (typeof value !== 'object' || value === null || typeof value.era !== 'string')
        bad.push(`era_verdicts ${String(key)}: not a verdict`);
    }
  } finally {
    await root.close();
  }
  return out;
}

/** extensions.json and creds.json (when there is one) parse as JSON objects. */
export function settingsParse(home: string): { extensions: Record<string, any>; creds: Record<string, any> | null } {
  const read = (f: string): Record<string, any> | null =>
    existsSync(path.join(home, f)) ? (JSON.parse(readFileSync(path.join(home, f), 'utf8')) as Record<string, any>) : null;
  return { extensions: read('extensions.json')!, creds: read('creds.json') };
}

/**
 * SIGKILLs the daemon, then checks what a kill must leave: no server process (the launchers' lifelines end them),
 * every LMDB row parses, both settings files parse. Returns what was found, for the row's own checks.
 */
export async function killAndCheck(
  t: Test,
  m: DaemonMatrix,
): Promise<ReturnType<typeof settingsParse> & { rows: Awaited<ReturnType<typeof storeRows>> }> {
  t.equal(await m.d.stop('SIGKILL'), 'SIGKILL', 'the daemon was killed');
  t.same(await waitNoLeftovers(m.tag, 20_000), [], 'no server outlived it');
  const rows = await storeRows(m.home);
  t.same(rows.bad, [], `every LMDB row parses (${rows.catalogues} catalogues, ${rows.sessions} sessions, ${rows.verdicts} verdicts)`);
  t.ok(rows.catalogues >= 10 && rows.sessions >= SESSIONS, 'the catalogues and the session records are there');
  const files = settingsParse(m.home);
  t.ok(files.extensions.mcp?.servers, 'extensions.json parses');
  return { ...files, rows };
}
