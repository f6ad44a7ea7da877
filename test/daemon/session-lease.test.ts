// Leases for sessions opened over HTTP (issue 25, item 2), against the real `albedo daemon` with real stdio servers
// (the official SDK's server), a lease shortened for the test by ALBEDO_SESSION_LEASE_MS: a client killed mid-session
// (holding the event stream, or in the middle of a call) leaves neither its session nor its servers behind; a slow but
// live client keeps its session (an open stream, renewals by request, a call longer than the lease), as do the sessions
// not opened over HTTP (a gateway's, the embedding API's); the bounds of the lease a client may ask for; and a daemon
// killed with SIGKILL: its successor leases the sessions it restores for their whole ttl from the restart.
// No assertion measures time: expiries are waited for with generous deadlines, and what must stay is checked after
// something else expired in the same daemon.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createAlbedo } from '../../api/albedo.ts';
import { fixture, NODE, newTag, taggedPids, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { follow, sdkServer, startDaemon, type Daemon } from './harness.ts';

t.setTimeout(240_000);

const write = (home: string, doc: Record<string, unknown>): void =>
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify(doc, null, 2));

const listed = async (d: Daemon): Promise<any[]> => (await d.call('GET', '/v1/sessions')).body.sessions;
/** Waits until session `id` is no longer listed (listing names no session, so it renews none). */
const gone = (d: Daemon, id: string, what: string) => until(async () => !(await listed(d)).some((s) => s.id === id), 60_000, what);
const open = async (d: Daemon, body: Record<string, unknown> = {}) => {
  const r = await d.call('POST', '/v1/sessions', { body });
  if (r.status !== 201) throw new Error(`open: ${r.status} ${r.text}`);
  return r.body;
};

/** test/fixtures/lease-client.ts: a process that opens a session and holds it (`stream`) or calls into it (`call`). */
async function client(t: Tap, d: Daemon, mode: 'stream' | 'call') {
  const child = spawn(NODE, [fixture('lease-client.ts'), String(d.info.port), mode], {
    env: { ...process.env, ALBEDO_TEST_DAEMON_TOKEN: d.info.token },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => void child.kill('SIGKILL'));
  const exited = new Promise((r) => child.once('exit', r));
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the client exited (${code})`)));
    createInterface({ input: child.stdout! }).once('line', resolve);
  });
  return { id: (JSON.parse(line) as { id: string }).id, kill: async () => void (child.kill('SIGKILL'), await exited) };
}
type Tap = { teardown(fn: () => unknown): void };

t.test('a client killed mid-session: its session and servers are gone within the lease', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { mcp: { servers: { sdk: sdkServer() } } });
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_SESSION_LEASE_MS: '1500' } });

  const streaming = await client(t, d, 'stream');
  const calling = await client(t, d, 'call');
  const before = await listed(d);
  t.same(before.map((s) => s.id).sort(), [streaming.id, calling.id].sort(), 'both open');
  t.match(before.find((s) => s.id === streaming.id).lease, { ttlMs: 1_500, streams: 1 }, 'the stream holds its session');
  t.ok(taggedPids(tag).length > 0, 'their servers run');

  await streaming.kill();
  await calling.kill();
  await gone(d, streaming.id, 'the streaming client’s session to expire');
  await gone(d, calling.id, 'the calling client’s session to expire');
  for (const id of [streaming.id, calling.id]) {
    t.match(await d.call('GET', `/v1/sessions/${id}`), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } }, 'gone');
  }
  t.same(await waitNoLeftovers(tag, 30_000), [], 'every server of theirs reaped');
  const log = d.lines.join('\n');
  for (const id of [streaming.id, calling.id]) t.match(log, `session ${id} expired`, 'the log says it expired');
  t.notOk(log.includes(d.info.token), 'no token in the log');
});

t.test('a slow but live client keeps its session; a gateway’s and the embedding API’s are never leased', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const TTL = 3_000;
  write(home, { mcp: { servers: { sdk: sdkServer() } }, gateways: { g: { server: 'sdk' } } });
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_SESSION_LEASE_MS: String(TTL) } });

  t.test('the lease asked for, shown and renewed', async (t) => {
    t.match(await d.call('POST', '/v1/sessions', { body: { lease: { ttlMs: 9_999 } } }), {
      status: 400,
      body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'lease', 'ttlMs'] } },
    });
    t.match(await d.call('POST', '/v1/sessions', { body: { lease: { ttlMs: 3_600_001 } } }), { status: 400 });
    t.match(await d.call('POST', '/v1/sessions', { body: { lease: { forever: true } } }), {
      status: 400,
      body: { error: { path: ['body', 'lease', 'forever'] } },
    });
    const long = await open(d, { lease: { ttlMs: 3_600_000 } });
    t.match(long.lease, { ttlMs: 3_600_000, streams: 0 }, 'the open answer shows the lease asked for');
    const renewed = await d.call('POST', `/v1/sessions/${long.id}/lease`);
    t.match(renewed, { status: 200, body: { ttlMs: 3_600_000, streams: 0 } }, 'renewed without a body');
    t.ok(renewed.body.expiresAt > Date.now(), 'expiresAt is ahead');
    t.match(await d.call('POST', `/v1/sessions/${long.id}/lease`, { body: { ttlMs: 60_000 } }), { status: 200, body: { ttlMs: 60_000 } });
    t.match((await d.call('GET', `/v1/sessions/${long.id}`)).body.lease, { ttlMs: 60_000 }, 'GET shows the new ttl');
    t.match(await d.call('POST', `/v1/sessions/${long.id}/lease`, { body: { ttlMs: 1 } }), {
      status: 400,
      body: { error: { path: ['body', 'ttlMs'] } },
    });
    t.match(await d.call('POST', '/v1/sessions/nope/lease'), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });
    t.equal((await d.call('DELETE', `/v1/sessions/${long.id}`)).status, 204);
    t.notOk(existsSync(path.join(home, 'session-leases.json')), 'no lease other than the default left');
  });

  // The gateway's session, opened by the daemon itself at its start.
  await until(async () => (await listed(d)).some((s) => s.label?.startsWith('gateway:g')), 60_000, "the gateway's session");
  const gateway = (await listed(d)).find((s) => s.label?.startsWith('gateway:g'));
  t.equal(gateway.lease, null, "a gateway's session carries no lease");
  t.match(await d.call('POST', `/v1/sessions/${gateway.id}/lease`), {
    status: 400,
    body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['params', 'id'] } },
  });

  // A session of the embedding API over the same home, in this process: the daemon has no hold on it.
  process.env.TEST_SERVER_TAG = tag;
  const albedo = await createAlbedo({ home });
  t.teardown(() => albedo.close());
  const embedded = await albedo.sessions.open({});

  const held = await open(d);
  const stream = await follow(d, held.id);
  t.teardown(() => stream.close());
  const renewing = await open(d);
  let renew = true;
  const renewals = (async () => {
    // A client that sends a request every 200 ms, no stream: a renewal or any request naming the session.
    for (let i = 0; renew; i++) {
      const r = await d.call(i % 2 ? 'GET' : 'POST', `/v1/sessions/${renewing.id}${i % 2 ? '/tools' : '/lease'}`);
      if (r.status !== 200) throw new Error(`renewal ${i}: ${r.status} ${r.text}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  })().then(
    () => null,
    (err: unknown) => err,
  );
  const calling = await open(d);
  const call = d.call('POST', `/v1/sessions/${calling.id}/calls`, { body: { name: 'sdk/sleep', arguments: { ms: 4 * TTL } } });
  const idle = await open(d);

  await gone(d, idle.id, 'the idle session to expire');
  t.pass('a session nobody names expires in this daemon');
  const answered = await call;
  t.equal(answered.status, 200, `a call four leases long kept its session to the end: ${answered.text}`);
  const now = await listed(d);
  for (const [s, what] of [
    [held, 'held by its open event stream'],
    [renewing, 'renewed by its requests'],
    [gateway, "the gateway's"],
  ] as const) {
    t.ok(
      now.some((x) => x.id === s.id),
      `${what}: kept across four leases`,
    );
  }
  t.notOk(embedded.closed, "the embedding API's session is open");
  t.match(await embedded.call('sdk/echo', { text: 'still here' }), { content: [{ text: 'still here' }] }, 'and answers');
  t.match(await d.call('GET', `/v1/sessions/${held.id}`), { status: 200, body: { lease: { ttlMs: TTL, streams: 1 } } });

  // Once the client stops, its session goes: what kept them was the client.
  renew = false;
  t.equal(await renewals, null, 'every renewal answered 200');
  await gone(d, renewing.id, 'the renewed session to expire once its client stops');
  await stream.close();
  await gone(d, held.id, 'the streamed session to expire once its stream closes');
  await gone(d, calling.id, 'the called session to expire after its call');
  t.ok(
    (await listed(d)).some((x) => x.id === gateway.id),
    "the gateway's session stays",
  );
  await albedo.close();
});

t.test('a daemon killed with SIGKILL: the next leases the sessions it restores for their whole ttl from the restart', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { mcp: { servers: { sdk: sdkServer() } } });
  const env = { ALBEDO_SESSION_LEASE_MS: '2000' };
  const d1 = await startDaemon(t, home, { tag, env });
  const a = await open(d1);
  const b = await open(d1, { lease: { ttlMs: 30_000 } });
  const file = path.join(home, 'session-leases.json');
  t.same(JSON.parse(readFileSync(file, 'utf8')), { leases: { [b.id]: 30_000 } }, 'a ttl other than the default is kept');
  // Their clients hold them until the daemon dies.
  const streams = [await follow(d1, a.id), await follow(d1, b.id)];
  t.equal(await d1.stop('SIGKILL'), 'SIGKILL');
  for (const s of streams) await s.close();

  const restart = Date.now();
  const d2 = await startDaemon(t, home, { tag, env });
  const restored = await listed(d2);
  const leaseOf = (id: string) => restored.find((s) => s.id === id)?.lease;
  t.match(leaseOf(a.id), { ttlMs: 2_000, streams: 0 }, 'restored with its lease');
  t.match(leaseOf(b.id), { ttlMs: 30_000, streams: 0 }, 'with the ttl it asked for');
  t.ok(leaseOf(a.id).expiresAt >= restart + 2_000, 'a whole ttl from the restart');
  t.ok(leaseOf(b.id).expiresAt >= restart + 30_000, 'a whole ttl from the restart (the longer one)');

  await gone(d2, a.id, 'the session whose client did not come back to expire');
  t.match(d2.lines.join('\n'), `session ${a.id} expired`);
  const back = await follow(d2, b.id);
  t.equal(back.status, 200, 'the other one’s client reconnects its stream within the grace');
  t.match((await d2.call('GET', `/v1/sessions/${b.id}`)).body.lease, { ttlMs: 30_000, streams: 1 });
  await back.close();
  t.equal((await d2.call('DELETE', `/v1/sessions/${b.id}`)).status, 204);
  t.notOk(existsSync(file), 'closed: its record goes');
});
