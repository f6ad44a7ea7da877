// Servers that come back (docs/design.md, "Servers that come back"): a server
// that cannot start is left out with a warning and a context line, probed
// only on activity — first retryMs after preparation, then at doubling
// intervals capped at 20 × retryMs, asserted with an injected clock — and,
// once a probe finds it up, it joins after the end of the next turn with a
// "capabilities changed" event.
import t from 'tap';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { CONNECT_RETRY } from '../../services/composer/connect-retry.ts';
import { albedoFor, fixture, newTag, server, tempHome, waitNoLeftovers } from '../helpers.ts';
import { FakeClock, FakeSettings, Recorder, composerFor, entry, readLog, statusOf, text, toolsOf } from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

t.test('left out, probed on the doubling schedule, joins after the next turn', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const dir = path.join(home, 'flaky');
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'down'), '');
  const starts = (): number => readLog(path.join(dir, 'log.jsonl')).filter((e) => e.event === 'start').length;
  const retryMs = 1_000;
  const attempts = CONNECT_RETRY.maxRetries + 1;
  const settings = new FakeSettings(
    [entry('ok', server(tag, fixture('sdk-server.ts'))), entry('flaky', server(tag, fixture('composer-changing-server.ts'), [dir]))],
    retryMs,
  );
  const clock = new FakeClock();
  const prepared = clock.now();
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, clock);
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);

  const flaky = statusOf(s, 'flaky');
  t.equal(flaky.state, 'left_out');
  t.equal(flaky.advertised, false);
  t.equal(flaky.reason?.code, 'ALBEDO_SERVER_EXITED', "the reason is the dial's error code");
  t.equal(flaky.nextProbeAt, prepared + retryMs, 'the first probe is due retryMs after preparation');
  t.same(rec.states('flaky'), ['starting', 'left_out']);
  t.ok(
    rec.of('warning').some((w) => w.server === 'flaky' && w.code === 'ALBEDO_SERVER_EXITED'),
    'named in a warning',
  );
  t.match(s.context(), /Left out of this session[^]*"flaky"/, 'and in the MCP context');
  t.equal(statusOf(s, 'ok').state, 'ready', 'the others load as usual');
  t.same(toolsOf(s, 'flaky'), []);
  t.equal(starts(), attempts, 'the first dial and its retries (connect-retry.ts): a process that exits may come up');

  // Due times: +1 s, then 2, 4, 8, 16 s after each probe, then capped at 20 s.
  const intervals = [1_000, 2_000, 4_000, 8_000, 16_000, 20_000, 20_000];
  let due = prepared;
  for (const [i, interval] of intervals.entries()) {
    due += interval;
    clock.set(due - 1);
    await s.activity(i % 2 ? 'turn_end' : 'submit');
    await s.idle();
    t.equal(starts(), i + attempts, `not probed 1 ms before probe ${i + 1} is due`);
    clock.set(due);
    await s.activity(i % 2 ? 'submit' : 'turn_end');
    await s.idle();
    t.equal(starts(), i + attempts + 1, `probe ${i + 1} dialled the server at its due time`);
    const probe = rec.of('probed').at(-1)!;
    t.same([probe.ok, probe.at], [false, due]);
    t.equal(probe.nextProbeAt, due + (intervals[i + 1] ?? 20_000), 'the next one after the doubled interval, capped at 20 × retryMs');
    t.equal(statusOf(s, 'flaky').state, 'left_out');
  }
  t.equal(rec.of('probed').length, intervals.length, 'one probe per due time, none in between');
  await s.activity('submit');
  await s.idle();
  t.equal(starts(), intervals.length + attempts, 'activity before the next due time probes nothing');

  // It comes back: the probe at a turn's end finds it up; it joins after the next turn, not mid-turn.
  rmSync(path.join(dir, 'down'));
  due += 20_000;
  clock.set(due);
  const before = s.tools().map((x) => x.name);
  await s.activity('turn_end');
  await s.idle();
  t.equal(rec.of('probed').at(-1)!.ok, true, 'the probe found it up');
  t.equal(statusOf(s, 'flaky').state, 'ready');
  t.equal(statusOf(s, 'flaky').pending, true, 'waiting for the end of the turn');
  t.equal(statusOf(s, 'flaky').advertised, false);
  await s.activity('submit');
  t.same(
    s.tools().map((x) => x.name),
    before,
    'not mid-turn',
  );
  t.equal(s.generation, 1);
  t.same(rec.of('refreshed'), []);
  await s.activity('turn_end');
  const refreshed = rec.of('refreshed');
  t.equal(refreshed.length, 1, 'the session refreshed after the turn');
  t.equal(refreshed[0].generation, 2, 'with the new tool generation');
  t.same(refreshed[0].servers, ['flaky']);
  t.match(refreshed[0].text, /"flaky"/, 'the capabilities-changed text names the server');
  t.equal(s.generation, 2);
  t.equal(toolsOf(s, 'flaky').length, 3, 'its tools are advertised now (alpha, set_tools, crash)');
  t.notMatch(s.context(), /Left out/, 'the context no longer lists it as left out');
  t.equal(statusOf(s, 'flaky').nextProbeAt, undefined);
  t.equal(text(await s.call('flaky/alpha', { text: 'back' })), 'alpha: back');
  const probes = rec.of('probed').length;
  clock.set(due + 1_000_000);
  await s.activity('submit');
  await s.idle();
  t.equal(rec.of('probed').length, probes, 'a server that is in is not probed');
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});
