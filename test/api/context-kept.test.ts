// The context text kept until compaction (issue 24, item 3), through the
// public API with real servers, real LMDB and the real composer worker:
// context() stays the text of the last compaction across generations while
// the refreshed event's text tells the news; compacted() takes the current
// text; cost() counts the kept text; a composed gateway gives a new client
// the current text; and a composer that crashes restores the kept text from
// the session's record.
import t from 'tap';
import type { SessionEvent } from '../../api/sessions.ts';
import { ComposedBackend } from '../../daemon/gateway/composed.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, newTag, rejection, until } from '../helpers.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

const tokens = (text: string): number => Math.ceil(text.length / 4);

t.test('context() is kept across generations until compacted(); cost() counts it; a gateway gives the current text', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const sdk = h.stdio(fixture('sdk-server.ts'));
  const notes = h.stdio(fixture('instructions-server.ts'));
  h.write({ sdk });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, faults: true });
  const s = await albedo.sessions.open();
  const events: SessionEvent[] = [];
  s.on((e) => events.push(e));
  const first = s.context();
  t.match(first, /Fixture server for Albedo tests/, "the sdk server's instructions");
  t.same([s.generation, s.contextGeneration, s.contextNow()], [1, 1, first], 'at open: the first generation, kept');

  // A server is added by hand: the session reloads into generation 2.
  h.write({ sdk, notes });
  await until(() => events.some((e) => e.type === 'refreshed' && e.servers.includes('notes')), 60_000, 'the reload after the edit');
  t.equal(s.generation, 2);
  const refreshed = events.find((e) => e.type === 'refreshed');
  t.match(refreshed, { generation: 2, text: /notes/, changes: [{ server: 'notes', change: 'added' }] }, 'the news is the user turn');
  const second = s.contextNow();
  t.match(second, /Notes server/, "the current text has the new server's instructions");
  t.not(second, first);
  t.equal(s.context(), first, 'context() is still the text of the last compaction');
  t.equal(s.contextGeneration, 1);
  const kept = s.cost();
  t.equal(kept.context, tokens(first), 'cost() counts the kept text');
  t.equal(kept.servers.find((x) => x.name === 'notes')?.context, 0, 'the new server has no part in it yet');
  t.ok(kept.servers.find((x) => x.name === 'sdk')!.context > 0);

  const gateway = new ComposedBackend(s, { name: 'kept', version: '0.0.0' });
  t.equal(gateway.instructions(), second, "a gateway's new client gets the current text");

  t.same(await s.compacted(), { generation: 2, context: second }, 'compacted() takes the current text');
  t.same([s.context(), s.contextGeneration], [second, 2], 'and context() gives it from now on');
  const now = s.cost();
  t.equal(now.context, tokens(second));
  t.ok(now.servers.find((x) => x.name === 'notes')!.context > 0, 'the new server counts now');
  t.same(await s.compacted(), { generation: 2, context: second }, 'again, nothing new: the same');

  // Generation 3 (notes leaves), then the composer crashes: the restored session keeps the kept text from its record.
  h.write({ sdk });
  await until(() => s.generation === 3, 60_000, 'the reload that removes notes');
  t.equal(s.contextNow(), first, 'the current text is the sdk-only one again');
  t.same([s.context(), s.contextGeneration], [second, 2], 'kept');
  const back = new Promise((resolve) => {
    const off = albedo.kernel.on('kernel', 'service/restarted', (e) => e.service === 'composer' && resolve(off()));
  });
  albedo.faults!.crash('composer');
  await back;
  await s.idle();
  t.same([s.generation, s.context(), s.contextGeneration], [3, second, 2], 'the restored session keeps the kept text');
  t.same(await s.compacted(), { generation: 3, context: first }, 'and compacts to the current one');

  await s.close();
  t.match(await rejection(s.compacted()), { code: 'ALBEDO_CLOSED', outcome: 'not_run' }, 'a closed session');
});
