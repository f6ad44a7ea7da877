// Races between the owner's direct call path and the composer worker (the
// review of the composer's move into a worker): a settings edit that retires
// a connection while direct calls keep arriving, events and the snapshot they
// explain, a record the composer cannot use, timeouts past Node's timers, a
// second close. Real servers, real LMDB, real files.
import t from 'tap';
import path from 'node:path';
import { open } from 'lmdb';
import type { Albedo } from '../../api/albedo.ts';
import type { SessionEvent } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, newTag, rejection, taggedPids, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

/** Every kernel call made on the owner's thread, and every outbound call a worker made (both pass the interceptors). */
function calls(albedo: Albedo): Array<{ method: string; id?: string }> {
  const log: Array<{ method: string; id?: string }> = [];
  albedo.kernel.use((next) => (c) => {
    log.push({ method: c.method, id: (c.params as { id?: string } | undefined)?.id });
    return next(c);
  });
  return log;
}

t.test('an edit that retires a connection under steady direct calls: none is cut, the old server is reaped', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const log = calls(albedo);
  const s = await albedo.sessions.open();
  const failures: unknown[] = [];
  let stop = false;
  let done = 0;
  // Two callers whose 300 ms calls always overlap: the old connection never has a moment without a call in flight.
  const loop = async (delayMs: number): Promise<void> => {
    await new Promise((r) => setTimeout(r, delayMs));
    while (!stop)
      await s.call('sdk/sleep', { ms: 300 }).then(
        () => done++,
        (err) => failures.push(err),
      );
  };
  const loops = [loop(0), loop(150)];
  // However the test ends, the callers stop.
  t.teardown(async () => {
    stop = true;
    await Promise.all(loops);
  });
  await until(() => done >= 4, 30_000, 'calls to flow');
  const oldId = log.find((c) => c.method === 'connection/open')!.id;
  // A new fingerprint, the same tools: the reload swaps in a new connection and retires the old one.
  h.write({ sdk: h.stdio(fixture('sdk-server.ts'), ['--legacy', 'serve']) });
  await until(() => log.some((c) => c.method === 'connection/close' && c.id === oldId), 60_000, 'the old connection to close');
  const after = done;
  await until(() => done >= after + 4, 30_000, 'calls to go on');
  stop = true;
  await Promise.all(loops);
  t.same(failures.slice(0, 3), [], 'no call failed: the retiring connection was drained, new calls went elsewhere');
  await until(() => taggedPids(tag).length === 1, 30_000, 'one server left');
  t.equal(taggedPids(tag).length, 1, 'the old server was reaped');
  t.notOk(s.status().some((x) => x.state !== 'ready'));
});

t.test('an event comes after the snapshot it explains', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const seen: Array<{ event: SessionEvent; generation: number; late: boolean; pending: boolean }> = [];
  s.on((event) =>
    seen.push({
      event,
      generation: s.generation,
      late: s.tools().some((x) => x.description.includes('tool "late_tool"')),
      pending: s.status()[0]!.pending,
    }),
  );
  await s.call('sdk/add_tool', {});
  await until(() => s.status()[0]!.pending, 30_000, "the list_changed to be pending on the owner's side too");
  await s.activity('turn_end');
  await until(() => seen.some((x) => x.event.type === 'refreshed'), 30_000, 'refreshed');
  const r = seen.find((x) => x.event.type === 'refreshed')!;
  t.equal(r.generation, (r.event as { generation: number }).generation, 'at the refreshed event, generation() is already the new one');
  t.ok(r.late, 'and tools() already has the new tool');
});

t.test('a session record the composer cannot use is dropped, and the composer keeps working', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, owner: 'races', faults: true });
  const s = await albedo.sessions.open();
  const env = open({ path: path.join(h.dir, 'store'), compression: false, maxDbs: 16 });
  t.teardown(() => env.close());
  const db = env.openDB<unknown, string>({ name: 'mcp_sessions' });
  const bad = {
    v: 1,
    owner: 'races',
    id: 'bad',
    options: {},
    generation: 1,
    digest: 'x',
    shown: [],
    connections: [['sdk', null]],
    savedAt: 0,
  };
  await db.put('races\nbad', bad);
  const restarted = new Promise<void>((resolve) => {
    const off = albedo.kernel.on('kernel', 'service/restarted', (e) => {
      if (e.service === 'composer') {
        off();
        resolve();
      }
    });
  });
  albedo.faults!.crash('composer');
  await restarted;
  await s.activity('submit');
  t.equal(text(await s.call('sdk/echo', { text: 'still' })), 'still', 'the session was restored and works');
  await until(() => db.get('races\nbad') === undefined, 10_000, 'the bad row to go');
  t.same(
    albedo.kernel.slots('composer').map((x) => x.state),
    ['ready'],
    'the composer is up',
  );
});

t.test("a timeout Node's timers cannot hold, or arguments too deep to cross threads, are refused, not cut short", async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  for (const timeoutMs of [2 ** 31 - 1, 2 ** 31, 3e9]) {
    t.match(await rejection(s.call('sdk/echo', { text: 'x' }, { timeoutMs })), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });
  }
  t.equal(text(await s.call('sdk/echo', { text: 'a day' }, { timeoutMs: 86_400_000 })), 'a day');
  // Arguments too deep to cross threads are refused before anything is sent, not failed inside.
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 5_000; i++) deep = { d: deep };
  t.match(await rejection(s.call('sdk/echo', { text: 'x', deep })), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });
});

t.test('a second sessions.close() resolves only once every server is reaped', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  await s.call('sdk/echo', { text: 'x' });
  const first = albedo.sessions.close();
  await albedo.sessions.close();
  t.same(taggedPids(tag), [], 'no server left when the second close resolved');
  await first;
  t.ok(s.closed);
});
