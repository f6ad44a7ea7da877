// A session that keeps working while servers fail (docs/design.md, "A
// session, step by step", 4): a server with a saved catalogue that turns out
// unreachable stays advertised, its calls fail as not run ("unavailable") and
// each later call dials it again; a server that drops is dialled again by the
// next call; a server or a transport worker lost mid-call is an unknown
// outcome, never retried.
import t from 'tap';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { CONNECT_RETRY } from '../../services/composer/connect-retry.ts';
import { albedoFor, fixture, newTag, rejection, server, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { FakeClock, FakeSettings, Recorder, composerFor, entry, readLog, statusOf, text, toolsOf } from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

function flakyServer(home: string, tag: string) {
  const dir = path.join(home, 'flaky');
  mkdirSync(dir, { recursive: true });
  const log = () => readLog(path.join(dir, 'log.jsonl'));
  return {
    entry: entry('flaky', server(tag, fixture('composer-changing-server.ts'), [dir])),
    down: (on: boolean) => (on ? writeFileSync(path.join(dir, 'down'), '') : rmSync(path.join(dir, 'down'), { force: true })),
    starts: () => log().filter((e) => e.event === 'start').length,
    calls: (tool: string) => log().filter((e) => e.event === 'call' && e.tool === tool).length,
  };
}

t.test('advertised but unreachable: stays advertised, calls fail as not run, each call dials again', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const flaky = flakyServer(home, tag);
  const settings = new FakeSettings([flaky.entry]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const first = await composer.open();
  await first.close();

  flaky.down(true);
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);
  await s.idle();
  // The background dial is the connection's first: it is tried again (connect-retry.ts) before it gives up.
  const attempts = CONNECT_RETRY.maxRetries + 1;
  t.equal(flaky.starts(), 1 + attempts, 'the background dial ran');
  const st = statusOf(s, 'flaky');
  t.equal(st.state, 'advertised', 'a failed background dial keeps it advertised');
  t.equal(st.advertised, true);
  t.equal(st.reason?.code, 'ALBEDO_SERVER_EXITED', 'with the reason it failed');
  t.equal(st.nextProbeAt, undefined, 'it is not probed: each call dials it');
  t.equal(toolsOf(s, 'flaky').length, 3);
  for (const n of [attempts + 2, attempts + 3]) {
    const e = await rejection(s.call('flaky/alpha', { text: 'x' }));
    t.equal(e.code, 'ALBEDO_SERVER_EXITED', "the dial's code");
    t.equal(e.outcome, 'not_run', 'the call did not run');
    t.match(e.data, { server: 'flaky', unavailable: true }, 'reported unavailable');
    t.equal(flaky.starts(), n, 'each call dialled it again');
  }
  t.equal(statusOf(s, 'flaky').state, 'advertised');
  await s.activity('turn_end');
  t.equal(s.generation, 1, 'nothing to refresh: it stays advertised');

  flaky.down(false);
  t.equal(text(await s.call('flaky/alpha', { text: 'up' })), 'alpha: up', 'the next call reaches it once it is up');
  t.equal(statusOf(s, 'flaky').state, 'ready');
  t.same(
    rec.states('flaky'),
    ['advertised', 'advertised', 'advertised', 'ready'],
    "advertised, advertised while its first dial is tried again, advertised with the dial's failure, then ready",
  );
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('a server lost mid-call: unknown outcome, not retried; the next call dials again', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const flaky = flakyServer(home, tag);
  const settings = new FakeSettings([flaky.entry]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const s = await composer.open();
  t.equal(statusOf(s, 'flaky').state, 'ready');

  const e = await rejection(s.call('flaky/crash', {}));
  t.equal(e.outcome, 'unknown', 'the server died mid-call: an unknown outcome');
  await until(() => statusOf(s, 'flaky').state === 'advertised', 10_000, 'the drop to be seen');
  t.equal(flaky.calls('crash'), 1, 'never retried');
  t.equal(flaky.starts(), 1);
  t.equal(text(await s.call('flaky/alpha', { text: 'again' })), 'alpha: again', 'the next call dialled it again');
  t.equal(flaky.starts(), 2);
  t.equal(flaky.calls('crash'), 1, 'and did not replay the lost call');
  t.equal(statusOf(s, 'flaky').state, 'ready');
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('a transport worker lost mid-call: unknown outcome, the next call opens the connection again', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const settings = new FakeSettings([entry('sdk', server(tag, fixture('sdk-server.ts')))]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1, faults: true });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const s = await composer.open();
  const inflight = s.call('sdk/sleep', { ms: 30_000 });
  await until(() => a.kernel.slots('transport')[0].keys.length === 1, 5_000, 'the connection to be placed');
  // The call is in flight at the worker (sent, not queued), so the crash loses it rather than delaying it.
  await until(() => a.kernel.slots('transport')[0].inflight >= 1, 10_000, 'the call to reach the worker');
  a.faults!.crash('transport');
  const e = await rejection(inflight);
  t.equal(e.code, 'ALBEDO_SERVICE_LOST');
  t.equal(e.outcome, 'unknown', 'never retried: the caller must inspect');
  t.equal(statusOf(s, 'sdk').state, 'advertised', 'last observed: not connected');
  t.equal(text(await s.call('sdk/echo', { text: 'back' })), 'back', 'the next call opens it on the restarted worker');
  t.equal(statusOf(s, 'sdk').state, 'ready');
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});
