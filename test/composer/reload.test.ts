// Reload as prepare-then-swap (docs/design.md, "A session, step by step", 6),
// bad configuration that fails the whole preparation and keeps the previous
// composition, and a session's own choice of servers and of the mcp
// extension.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, newTag, rejection, server, taggedPids, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import {
  FakeClock,
  FakeSettings,
  Recorder,
  badConfig,
  composerFor,
  entry,
  readLog,
  statusOf,
  text,
  toolsOf,
} from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

function changing(home: string, tag: string, name: string) {
  const dir = path.join(home, name);
  mkdirSync(dir, { recursive: true });
  const pids = () =>
    readLog(path.join(dir, 'log.jsonl'))
      .filter((e) => e.event === 'start')
      .map((e) => e.pid as number);
  return { entry: entry(name, server(tag, fixture('composer-changing-server.ts'), [dir])), pids };
}

t.test('reload prepares the replacement first, swaps, then closes the old connections; unchanged servers keep theirs', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const keep = changing(home, tag, 'keep');
  const edit = changing(home, tag, 'edit');
  const settings = new FakeSettings([keep.entry, edit.entry]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);
  const [oldEdit] = edit.pids();
  const names = s.tools().map((x) => x.name);

  // `edit` is edited into another server that takes 2 s to answer: a new fingerprint, nothing saved for it.
  const slowLog = path.join(home, 'slow.log');
  settings.replace(entry('edit', server(tag, fixture('composer-slow-server.ts'), ['2', slowLog])));
  const reloading = s.reload();
  await until(() => readLog(slowLog).some((e) => e.event === 'start'), 15_000, 'the replacement to start');
  t.ok(taggedPids(tag).includes(oldEdit), 'while the replacement prepares, the old server still runs');
  t.equal(text(await s.call('edit/alpha', { text: 'old' })), 'alpha: old', 'and the old composition still serves calls');
  t.same(
    s.tools().map((x) => x.name),
    names,
  );
  await reloading;
  t.equal(s.generation, 2, 'the swap is a new generation');
  const ev = rec.of('refreshed').at(-1)!;
  t.same([ev.generation, ev.servers], [2, ['edit']]);
  t.equal(text(await s.call('edit/echo', { text: 'new' })), 'new', 'calls go to the replacement');
  await s.idle();
  await until(() => !taggedPids(tag).includes(oldEdit), 10_000, 'the old server to be reaped');
  t.pass('the old connection was closed after the swap');
  t.equal(keep.pids().length, 1, 'the unchanged server kept its connection (no new process)');
  t.equal(text(await s.call('keep/alpha', { text: 'same' })), 'alpha: same');
  t.equal(statusOf(s, 'keep').state, 'ready');

  await s.reload();
  t.equal(s.generation, 2, 'a reload that changes nothing the model sees is no new generation');
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('bad configuration fails the whole preparation; a reload keeps the previous composition', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const one = changing(home, tag, 'one');
  const settings = new FakeSettings([one.entry]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());

  settings.failWith = badConfig('one');
  const refused = await rejection(composer.open());
  t.equal(refused.code, 'ALBEDO_INVALID_CONFIG');
  t.equal(one.pids().length, 0, 'nothing was started');
  t.same(composer.sessions, []);

  settings.failWith = undefined;
  const s = await composer.open();
  const before = { tools: s.tools(), context: s.context(), status: s.status(), generation: s.generation };
  settings.failWith = badConfig('one');
  const e = await rejection(s.reload());
  t.equal(e.code, 'ALBEDO_INVALID_CONFIG', 'the reload rejects with the error');
  t.same((e.data as { server: string }).server, 'one', 'naming the server');
  t.same(
    { tools: s.tools(), context: s.context(), status: s.status(), generation: s.generation },
    before,
    'the previous composition stays',
  );
  t.equal(text(await s.call('one/alpha', { text: 'still' })), 'alpha: still', 'and keeps working');
  t.equal(one.pids().length, 1, 'on its old connection');

  // A catalogue over the size limit is bad configuration too.
  settings.failWith = undefined;
  settings.servers_ = [one.entry, entry('deep', server(tag, fixture('hostile-server.ts'), ['deep']))];
  const big = await rejection(s.reload());
  t.equal(big.code, 'ALBEDO_CATALOGUE_TOO_LARGE');
  t.same({ tools: s.tools(), generation: s.generation }, { tools: before.tools, generation: before.generation });
  const fresh = await rejection(composer.open());
  t.equal(fresh.code, 'ALBEDO_CATALOGUE_TOO_LARGE', "and fails a new session's preparation");
  await s.close();
  t.same(await waitNoLeftovers(tag), [], 'the failed preparations left nothing running');
});

t.test('a session chooses its servers and may turn mcp off', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const x = changing(home, tag, 'x');
  const y = changing(home, tag, 'y');
  const settings = new FakeSettings([x.entry, y.entry]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock(), { profiles: ['portable', 'openai'] });

  const off = await composer.open({ extensions: { mcp: false } });
  t.same([off.tools(), off.context(), off.status()], [[], '', []], 'mcp off: no tools, no context');
  t.equal(settings.calls, 0, 'the settings were not even asked');
  t.same(taggedPids(tag), [], 'no connection');
  const none = await rejection(off.call('x/alpha', {}));
  t.equal(none.code, 'ALBEDO_NOT_FOUND');
  await off.close();

  const onlyX = await composer.open({ servers: { include: ['x'] } });
  t.same(
    onlyX.status().map((st) => st.name),
    ['x'],
  );
  t.same(settings.choices.at(-1), { include: ['x'], exclude: undefined }, 'the choice reaches the settings port');
  const notY = await composer.open({ servers: { exclude: ['x'] } });
  t.same(
    notY.status().map((st) => st.name),
    ['y'],
  );
  t.equal(toolsOf(notY, 'x').length, 0);
  await Promise.all([onlyX.close(), notY.close()]);

  settings.disabled = ['z'];
  const withOff = await composer.open({ servers: { include: ['x', 'z'] } });
  t.same(
    withOff.status().map((st) => st.name),
    ['x', 'z'],
  );
  t.same(
    statusOf(withOff, 'z'),
    { name: 'z', state: 'disabled', advertised: false, tools: 0, pending: false },
    'a switched-off server is shown, not tried',
  );
  await withOff.close();
  settings.disabled = [];
  const unknown = await rejection(composer.open({ servers: { include: ['nope'] } }));
  t.equal(unknown.code, 'ALBEDO_NOT_FOUND');

  settings.mcpEnabled = false;
  const byDefault = await composer.open();
  t.same(byDefault.status(), [], 'the extension is off by default in the settings');
  const chosen = await composer.open({ extensions: { mcp: true }, profile: 'openai' });
  t.equal(chosen.status().length, 2, 'and a session may turn it on');
  await Promise.all([byDefault.close(), chosen.close()]);

  for (const bad of [{ servers: { include: 'x' } }, { profile: 'nope' }, { extensions: { mcp: 'yes' } }, { other: 1 }]) {
    const e = await rejection(composer.open(bad as never));
    t.equal(e.code, 'ALBEDO_INVALID_ARGUMENT', JSON.stringify(bad));
  }
  t.same(await waitNoLeftovers(tag), []);
});

t.test('closing the composer closes every session and reaps every server', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const settings = new FakeSettings([entry('sdk', server(tag, fixture('sdk-server.ts'))), changing(home, tag, 'c').entry]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 2 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const s1 = await composer.open();
  const s2 = await composer.open();
  t.equal(taggedPids(tag).length >= 4, true, 'one connection per session and server');
  const rec = new Recorder();
  s1.on(rec.listener);
  await composer.close();
  t.same(rec.of('closed').length, 1);
  t.same(composer.sessions, []);
  t.same(await waitNoLeftovers(tag), [], 'nothing outlived close');
  t.equal((await rejection(s2.activity('submit'))).code, 'ALBEDO_CLOSED');
  t.equal((await rejection(composer.open())).code, 'ALBEDO_CLOSED');
});
