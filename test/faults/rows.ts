// The rows of the fault matrix that break one service's worker (issue 25
// item 4), each run twice: crashed (service-crashes.test.ts) and hung
// (service-hangs.test.ts: the kernel's heartbeat finds it out). Ten sessions
// over ten real servers (three shared), a call in flight on every server;
// per row: what the calls in flight report (ALBEDO_SERVICE_LOST, `unknown`,
// where the lost worker held them; never sent again: the counted servers log
// each call by id), the sessions after (same ids, tools and generation), and
// no orphan process (the teardown checks that none outlives the instance).
import net from 'node:net';
import type { Test } from 'tap';
import type { AlbedoOptions } from '../../api/albedo.ts';
import type { AlbedoSession } from '../../api/sessions.ts';
import { newTag, rejection, taggedPids, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { toolOf } from '../fixtures/session-home.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { SHARED, callsInFlight, inflight, openMatrix, ownOf, restarted, shapeOf, timesSent } from './matrix-setup.ts';
import type { Landed, Matrix } from './matrix-setup.ts';

export type Fault = 'crash' | 'hang';
type T = Test;
const LOST = 'ALBEDO_SERVICE_LOST/unknown';

/** The hang rows' heartbeat: short, so the matrix stays quick; long enough that a loaded machine's pauses are not taken for a hang. */
export const HANG_OPTIONS: AlbedoOptions = { supervision: { heartbeat: { intervalMs: 250, timeoutMs: 4_000 } } };

/** Waits until every counted call of `calls` reached its server: they are in flight there. */
const atServers = (m: Matrix, calls: Landed[]): Promise<void> =>
  until(() => calls.every((c) => c.id === undefined || timesSent(m.logs, c.server, c.id) === 1), 60_000, 'the calls to reach the servers');

/** Every counted call was sent exactly once: none was retried. */
function sentOnce(t: T, m: Matrix, calls: Landed[]): void {
  const counted = calls.filter((c) => c.id !== undefined);
  t.same(
    counted.map((c) => timesSent(m.logs, c.server, c.id!)),
    counted.map(() => 1),
    'each counted call reached its server once: none was sent again',
  );
}

async function echoOf(s: AlbedoSession, server: string, id: string): Promise<boolean> {
  if (server === 'fs') return Boolean(await s.call(toolOf(s, server, 'list_allowed_directories'), {}));
  const args = server === 'everything' ? { message: id } : { text: id, id };
  return text(await s.call(toolOf(s, server, 'echo'), args)).includes(id);
}

/** Every session answers a call to each of its servers. */
async function allAnswer(t: T, m: Matrix): Promise<void> {
  const echoed = await Promise.all(
    m.sessions.map((s, i) => Promise.all([SHARED[i % SHARED.length]!, ownOf(i)].map((srv) => echoOf(s, srv, `after-${i}-${srv}`)))),
  );
  t.ok(
    echoed.every((pair) => pair.every(Boolean)),
    'every session answers a call to each of its servers',
  );
}

/** Each call's end: 'ok', or `code/outcome`. */
const outcomes = (calls: Landed[]): Promise<string[]> =>
  Promise.all(calls.map(async (c) => ((r) => (r.ok ? 'ok' : `${r.err.code}/${r.err.outcome}`))(await c.result)));

/** A transport worker lost: the calls it held are unknown, the other worker's go through; the lost connections reopen once. */
export async function transportRow(t: T, fault: Fault, opts: AlbedoOptions = {}): Promise<void> {
  const m = await openMatrix(t, newTag(), opts);
  const before = shapeOf(m.sessions);
  const procs = taggedPids(m.tag).length;
  const calls = callsInFlight(m.sessions, fault === 'crash' ? 8_000 : 4_000);
  await atServers(m, calls);
  const victim = m.sessions[0]!.connectionOf('c1')!;
  const lostKeys = new Set(m.albedo.kernel.slots('transport').find((s) => s.keys.includes(victim))!.keys);
  const back = restarted(m.albedo, 'transport');
  m.albedo.faults![fault]('transport', victim);
  const seen = await outcomes(calls);
  t.comment(JSON.stringify(calls.map((c, i) => `${c.server}:${seen[i]}`)));
  const expected = calls.map((c) => (c.connection !== undefined && lostKeys.has(c.connection) ? LOST : 'ok'));
  t.same(seen, expected, 'the lost worker’s calls are unknown, the other’s went through');
  t.ok(expected.includes('ok') && expected.includes(LOST), 'both workers held calls');
  await back;
  sentOnce(t, m, calls);
  t.same(shapeOf(m.sessions), before, 'same ids, tools and generation');
  await allAnswer(t, m);
  t.same(shapeOf(m.sessions), before, 'and still after the lost connections were reopened');
  sentOnce(t, m, calls);
  await until(() => taggedPids(m.tag).length === procs, 20_000, 'one process per connection again');
  t.pass('the lost servers were reaped and reopened once: no orphan, no double');
}

/** The settings or catalogue worker lost: no call passes through it, so none is touched; the sessions stay. */
export async function quietRow(t: T, service: 'settings' | 'catalogue', fault: Fault, opts: AlbedoOptions = {}): Promise<void> {
  const m = await openMatrix(t, newTag(), opts);
  const before = shapeOf(m.sessions);
  const procs = taggedPids(m.tag).length;
  const calls = callsInFlight(m.sessions, 4_000);
  await atServers(m, calls);
  const back = restarted(m.albedo, service);
  m.albedo.faults![fault](service);
  await back;
  const seen = await outcomes(calls);
  t.same(
    seen,
    seen.map(() => 'ok'),
    'every call in flight went through',
  );
  sentOnce(t, m, calls);
  t.same(shapeOf(m.sessions), before, 'same ids, tools and generation');
  await m.sessions[0]!.reload();
  t.same(shapeOf(m.sessions), before, 'a reload after the restart changes nothing');
  await allAnswer(t, m);
  t.equal(taggedPids(m.tag).length, procs, 'no server was respawned');

  // Again, with a call of the composer's in the worker when it is lost: a reload (settings), an open (catalogue).
  let armed = true;
  const off = m.albedo.kernel.use((next) => (c) => {
    if (armed && c.service === service) {
      armed = false;
      m.albedo.faults![fault](service);
    }
    return next(c);
  });
  const again = restarted(m.albedo, service);
  const through = service === 'settings' ? m.sessions[2]!.reload() : m.albedo.sessions.open({ servers: { include: ['c2'] } });
  const end = await through.then(
    () => 'ok',
    (e: { code?: string; outcome?: string }) => `${e.code}/${e.outcome}`,
  );
  off();
  await again;
  t.comment(`${service} lost under the composer's call: ${end}`);
  // Settings and catalogue reads change nothing: the composer asks the restarted worker again.
  t.equal(end, 'ok', `the ${service === 'settings' ? 'reload' : 'open'} it was in asked the restarted worker again, and went through`);
  t.same(shapeOf(m.sessions), before, 'the sessions are as they were');
  await allAnswer(t, m);
}

/** The composer lost with a reload and an open in it: both unknown; calls straight to open servers untouched. */
export async function composerRow(t: T, fault: Fault, opts: AlbedoOptions = {}): Promise<void> {
  const m = await openMatrix(t, newTag(), opts);
  const before = shapeOf(m.sessions);
  const procs = taggedPids(m.tag).length;
  const calls = callsInFlight(m.sessions, 4_000);
  await atServers(m, calls);
  // The settings calls of both are held on the way, so both wait in the composer when it is lost.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const off = m.albedo.kernel.use((next) => (c) => (c.service === 'settings' ? gate.then(() => next(c)) : next(c)));
  const reload = m.sessions[1]!.reload();
  const open = m.albedo.sessions.open({ servers: { include: ['s1'] } });
  await until(() => inflight(m.albedo, 'composer') >= 2, 30_000, 'both in the composer');
  const back = restarted(m.albedo, 'composer');
  m.albedo.faults![fault]('composer');
  const r = await rejection(reload);
  const o = await rejection(open);
  off();
  release();
  t.same([`${r.code}/${r.outcome}`, `${o.code}/${o.outcome}`], [LOST, LOST], 'the reload and the open in flight are unknown');
  const seen = await outcomes(calls);
  t.same(
    seen,
    seen.map(() => 'ok'),
    'every call in flight went straight to its server and through',
  );
  await back;
  sentOnce(t, m, calls);
  t.same(shapeOf(m.sessions), before, 'restored: same ids, tools and generation');
  await allAnswer(t, m);
  t.same(shapeOf(m.sessions), before);
  await until(() => taggedPids(m.tag).length === procs, 20_000, 'the lost open to be reaped');
  t.pass('resumed, not respawned; nothing of the lost open is left');
}

/** The OAuth worker lost mid-sign-in (waiting for the browser, against oidc-provider): unknown, no token; sessions untouched. */
export async function oauthRow(t: T, fault: Fault, opts: AlbedoOptions = {}): Promise<void> {
  const m = await openMatrix(t, newTag(), opts);
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const before = shapeOf(m.sessions);
  const calls = callsInFlight(m.sessions, 4_000);
  await atServers(m, calls);
  let asked = false;
  const authorize = (): Promise<void> => {
    asked = true;
    return new Promise(() => {});
  };
  const cfg = { url: stack.mcpUrl, oauth: { callbackPort: await freePort() } };
  const signIn = m.albedo.signIn(cfg, { name: 'secure', authorize });
  await until(() => asked, 60_000, 'the sign-in to wait for the browser');
  const back = restarted(m.albedo, 'oauth');
  m.albedo.faults![fault]('oauth');
  const e = await rejection(signIn);
  t.equal(`${e.code}/${e.outcome}`, LOST, 'the sign-in in flight is unknown');
  await back;
  const seen = await outcomes(calls);
  t.same(
    seen,
    seen.map(() => 'ok'),
    'every call in flight went through',
  );
  sentOnce(t, m, calls);
  t.same(shapeOf(m.sessions), before, 'same ids, tools and generation');
  t.match(await m.albedo.authStatus(cfg, { name: 'secure' }), { state: 'needs_sign_in' }, 'no token was stored');
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
