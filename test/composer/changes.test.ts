// Catalogue changes reach the model only after a turn (docs/design.md, "Saved
// catalogues"): a list_changed from a server updates its saved catalogue and
// the session refreshes after its turn; a background discovery that differs
// from the saved catalogue is saved and the session refreshes after its next
// turn.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, newTag, rejection, server, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { FakeClock, FakeSettings, Recorder, composerFor, entry, statusOf, text, toolsOf } from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

const toolNames = (rows: Array<{ name: string }> | undefined): string[] => (rows ?? []).map((x) => x.name).sort();

t.test('list_changed: saved at once, advertised after the turn', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const dir = path.join(home, 'changing');
  mkdirSync(dir);
  const settings = new FakeSettings([entry('changing', server(tag, fixture('composer-changing-server.ts'), [dir]))]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer, store } = composerFor(t, a, settings, new FakeClock());
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);
  const fp = settings.servers_[0].fingerprint;
  t.same(toolsOf(s, 'changing').length, 3);

  t.equal(text(await s.call('changing/set_tools', { names: ['alpha', 'beta'] })), 'done');
  await until(() => statusOf(s, 'changing').pending, 15_000, 'the list change to reach the session');
  await s.idle();
  t.same(
    toolNames(store.current('changing', fp)?.catalogue.tools),
    ['alpha', 'beta', 'crash', 'set_tools'],
    'the saved catalogue was updated',
  );
  t.equal(toolsOf(s, 'changing').length, 3, 'the session still advertises the old tools mid-turn');
  const early = await rejection(s.call('changing/beta', {}));
  t.equal(early.code, 'ALBEDO_NOT_FOUND', 'beta is not advertised yet');
  await s.activity('submit');
  t.equal(s.generation, 1, 'a submit does not refresh');
  await s.activity('turn_end');
  t.equal(s.generation, 2, 'refreshed after the turn');
  const [ev] = rec.of('refreshed');
  t.same([ev?.generation, ev?.servers], [2, ['changing']]);
  t.match(ev?.text, /"changing"/);
  t.equal(toolsOf(s, 'changing').length, 4);
  t.equal(text(await s.call('changing/beta', { text: 'new' })), 'beta: new');
  t.equal(statusOf(s, 'changing').pending, false);
  await s.activity('turn_end');
  t.equal(s.generation, 2, 'nothing pending: no new generation');
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('a background discovery that differs is saved, and the session refreshes after its next turn', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const dir = path.join(home, 'changing');
  mkdirSync(dir);
  const settings = new FakeSettings([entry('changing', server(tag, fixture('composer-changing-server.ts'), [dir]))]);
  const fp = settings.servers_[0].fingerprint;
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer, store } = composerFor(t, a, settings, new FakeClock());
  await (await composer.open()).close();
  t.same(toolNames(store.current('changing', fp)?.catalogue.tools), ['alpha', 'crash', 'set_tools']);

  // The server now offers more under the same configuration (an upgraded server, say).
  writeFileSync(path.join(dir, 'tools.json'), JSON.stringify(['alpha', 'gamma']));
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);
  t.equal(toolsOf(s, 'changing').length, 3, 'the saved catalogue is advertised at once');
  await s.idle();
  t.equal(statusOf(s, 'changing').state, 'ready');
  t.equal(statusOf(s, 'changing').pending, true, 'the difference waits for the end of the turn');
  t.same(
    toolNames(store.current('changing', fp)?.catalogue.tools),
    ['alpha', 'crash', 'gamma', 'set_tools'],
    'the new discovery was saved',
  );
  t.equal(toolsOf(s, 'changing').length, 3);
  await s.activity('turn_end');
  t.equal(s.generation, 2);
  t.same(
    rec.of('refreshed').map((e) => e.servers),
    [['changing']],
  );
  t.equal(text(await s.call('changing/gamma', {})), 'gamma: ');
  await s.close();

  const next = await composer.open();
  t.equal(toolsOf(next, 'changing').length, 4, 'the next session advertises the new catalogue at once');
  await next.close();
  t.same(await waitNoLeftovers(tag), []);
});
