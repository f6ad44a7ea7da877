// The composer and catalogue workers crash mid-operation (kernel fault
// injection) under sessions opened through the public API, with real servers
// and real LMDB: the sessions survive (their records are in LMDB), a call in
// flight through the composer fails as an unknown outcome and is not retried,
// a call sent straight to an open server is not touched, the next call works,
// and no server is respawned or left behind.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createAlbedo, type Albedo } from '../../api/albedo.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, newTag, rejection, taggedPids, until, waitNoLeftovers } from '../helpers.ts';
import { readLog, text } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

/** Resolves when the next `service/restarted` of `service` arrives. */
function restarted(albedo: Albedo, service: string): Promise<void> {
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
const pidsOf = (tag: string, script: string): number[] =>
  taggedPids(tag).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script);
    } catch {
      return false;
    }
  });

const inflight = (albedo: Albedo, service: string): number => albedo.kernel.slots(service as never).reduce((n, s) => n + s.inflight, 0);

t.test(
  'the composer crashes with a call in flight: the session survives, the call is unknown and not retried, the next call works',
  async (t) => {
    const tag = newTag();
    const h = sessionHome(t, tag);
    const slowLog = path.join(h.dir, 'slow.log');
    h.write({ slow: h.stdio(fixture('composer-slow-server.ts'), ['3', slowLog]), sdk: h.stdio(fixture('sdk-server.ts')) });
    // A first instance saves both catalogues, so the second advertises them at once and dials in the background.
    const a1 = await createAlbedo({ home: h.dir, transportWorkers: 1 });
    await a1.sessions.open();
    await a1.close();
    t.same(await waitNoLeftovers(tag), []);

    const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, faults: true });
    const s = await albedo.sessions.open();
    const names = s.tools().map((x) => x.name);
    await until(() => s.status().find((x) => x.name === 'sdk')?.state === 'ready', 30_000, 'the sdk server to be ready');
    const sdkPids = pidsOf(tag, 'sdk-server.ts');
    t.equal(sdkPids.length, 1);
    const events: string[] = [];
    s.on((e) => events.push(e.type));

    // The slow server is still dialling: this call goes through the composer and waits there.
    const throughComposer = s.call('slow/echo', { text: 'lost' });
    // The sdk server is open: this call goes straight to its transport worker.
    const direct = s.call(toolOf(s, 'sdk', 'sleep'), { ms: 1_500 });
    await until(() => inflight(albedo, 'composer') >= 1, 30_000, 'the call to reach the composer');
    const back = restarted(albedo, 'composer');
    albedo.faults!.crash('composer');

    const lost = await rejection(throughComposer);
    t.equal(lost.code, 'ALBEDO_SERVICE_LOST', 'the call in flight through the composer failed with it');
    t.equal(lost.outcome, 'unknown');
    t.equal(text(await direct), 'slept', 'the call sent straight to the open server was not touched');
    await back;
    t.same(
      s.tools().map((x) => x.name),
      names,
      'the session kept its tools',
    );
    t.equal(s.generation, 1, 'and its generation');

    t.equal(text(await s.call('slow/echo', { text: 'next' })), 'next', 'the next call works');
    t.same(
      readLog(slowLog)
        .filter((e) => e.event === 'call')
        .map((e) => e.text),
      ['next'],
      'the lost call was never sent again',
    );
    t.equal(text(await s.call('sdk/echo', { text: 'still here' })), 'still here');
    t.same(pidsOf(tag, 'sdk-server.ts'), sdkPids, 'the open server was resumed, not respawned');
    t.equal(s.generation, 1, 'the restored session showed the same tools: no new generation');
    t.notOk(events.includes('closed'), 'the session was never closed');
    await s.close();
    t.same(await waitNoLeftovers(tag), [], 'closing it reaps every server, resumed ones included');
  },
);

t.test('the composer crashes mid-open: the open fails as unknown, and no server it dialled outlives it', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const slowLog = path.join(h.dir, 'slow.log');
  // Nothing saved: the sdk server opens quickly, the slow one keeps the preparation waiting.
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')), slow: h.stdio(fixture('composer-slow-server.ts'), ['4', slowLog]) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, faults: true });
  const opened: string[] = [];
  albedo.kernel.use((next) => (c) => {
    const p = next(c);
    if (c.service === 'transport' && c.method === 'connection/open')
      p.then(
        () => opened.push((c.params as { name: string }).name),
        () => {},
      );
    return p;
  });
  const opening = albedo.sessions.open();
  await until(
    () => readLog(slowLog).some((e) => e.event === 'start') && opened.includes('sdk'),
    30_000,
    'the slow server to start, the sdk one to open',
  );
  const back = restarted(albedo, 'composer');
  albedo.faults!.crash('composer');
  const err = await rejection(opening);
  t.equal(err.code, 'ALBEDO_SERVICE_LOST');
  t.equal(err.outcome, 'unknown');
  await back;
  t.same(await waitNoLeftovers(tag, 30_000), [], 'the servers of the lost preparation were closed (the sdk one was already open)');
  const s = await albedo.sessions.open({ servers: { include: ['sdk'] } });
  t.equal(text(await s.call('sdk/echo', { text: 'fresh' })), 'fresh', 'a new session opens and works');
});

t.test('the catalogue worker is lost mid-normalise: the session opens with every tool, and saved catalogues stay', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')), sdk1: h.stdio(fixture('sdk1-server.ts')) });
  // A short liveness timeout: the hung catalogue worker is found out within seconds.
  const albedo = await albedoFor(t, tag, {
    home: h.dir,
    transportWorkers: 1,
    faults: true,
    supervision: { heartbeat: { intervalMs: 200, timeoutMs: 3_000 } },
  });
  let crashed = 0;
  // The worker hangs, then the first normalise is sent to it: the call is in flight when the liveness check kills the worker.
  albedo.kernel.use((next) => (c) => {
    if (c.service !== 'catalogue' || c.method !== 'catalogue/normalise' || crashed) return next(c);
    crashed++;
    albedo.faults!.hang('catalogue');
    return next(c);
  });
  const back = restarted(albedo, 'catalogue');
  const s = await albedo.sessions.open();
  await back;
  t.equal(crashed, 1, 'the catalogue worker was lost with the first normalise in flight');
  const names = s
    .tools()
    .map((x) => x.name)
    .sort();
  t.ok(names.includes(toolOf(s, 'sdk', 'echo')) && names.includes(toolOf(s, 'sdk1', 'echo')), 'every server is advertised');
  t.same(s.warnings(), [], 'nothing was left out');
  await s.idle();
  await s.close();

  const again = await albedo.sessions.open();
  t.same(
    again
      .tools()
      .map((x) => x.name)
      .sort(),
    names,
    'a session opened afterwards advertises the same',
  );
  // Advertised from the saved catalogues; a background dial may have made one ready already.
  t.match(again.status(), [
    { name: 'sdk', state: /^(advertised|ready)$/, advertised: true },
    { name: 'sdk1', state: /^(advertised|ready)$/, advertised: true },
  ]);
});
