// Resource subscriptions on a 2026-07-28 server, where each subscribe replaces
// the held subscriptions/listen: a subscribe is done when the listen held for
// it (or a later one) is acknowledged — the acknowledgement names its listen —
// not at whichever acknowledgement comes next; subscribes made at once are all
// done and all routed; a listen the server refuses fails the subscribes
// waiting for it and is held again without their URIs. Against the official
// SDK server 2.x (fixtures/flows-server.ts) over stdio and HTTP, and the class
// itself for the orders a real server does not choose.
import t from 'tap';
import { AlbedoError } from '../../protocol/errors.ts';
import { META_SUBSCRIPTION_ID, type ListenFilter } from '../../protocol/rev2026-07-28/index.ts';
import { Listens, type ListenLink } from '../../services/transport/listen.ts';
import { albedoFor, fixture, httpFixture, newTag, rejection, server, until } from '../helpers.ts';

t.setTimeout(120_000);

const FLOWS = fixture('flows-server.ts');
const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A link whose listens the test answers: each sent one is kept with its id and how to fail it. */
function fakeLink(): { link: ListenLink; sent: Array<{ id: number; filter: ListenFilter; fail(err: AlbedoError): void }> } {
  const sent: Array<{ id: number; filter: ListenFilter; fail(err: AlbedoError): void }> = [];
  let id = 0;
  const link: ListenLink = {
    current: () => true,
    send: (filter, signal) => {
      const { promise, reject } = Promise.withResolvers<unknown>();
      signal.addEventListener('abort', () => reject(new AlbedoError('ALBEDO_DEADLINE', 'aborted')));
      sent.push({ id: ++id, filter, fail: reject });
      return promise;
    },
    sentId: () => (id === 0 ? undefined : id),
    resync: () => {},
    warn: () => {},
    guard: (fn) => fn,
  };
  return { link, sent };
}

const acked = (id: number) => ({ notifications: {}, _meta: { [META_SUBSCRIPTION_ID]: id } });

t.test('a subscribe is done when its own listen (or a later one) is acknowledged', async (t) => {
  const { link, sent } = fakeLink();
  const l = new Listens();
  const caps = { resources: { subscribe: true } };
  const done: string[] = [];
  const a = l.subscribe(link, caps, 'fixture://a', true).then(() => done.push('a'));
  const b = l.subscribe(link, caps, 'fixture://b', true).then(() => done.push('b'));
  t.same(
    sent.map((s) => s.filter.resourceSubscriptions),
    [['fixture://a'], ['fixture://a', 'fixture://b']],
  );
  // The first listen's acknowledgement (sent before the server saw it replaced) ends only the first subscribe.
  l.acknowledged(acked(1));
  await flush();
  t.same(done, ['a'], "the first listen's acknowledgement does not end the second's subscribe");
  l.acknowledged(acked(2));
  await Promise.all([a, b]);
  t.same(done, ['a', 'b']);
});

t.test('a listen refused before its acknowledgement fails its subscribe, and is held again without the URI', async (t) => {
  const { link, sent } = fakeLink();
  const l = new Listens();
  const caps = { tools: { listChanged: true }, resources: { subscribe: true } };
  l.hold(link, caps);
  const refused = rejection(l.subscribe(link, caps, 'fixture://bad', true));
  sent.at(-1)!.fail(new AlbedoError('ALBEDO_SERVER_ERROR', 'Subscription limit reached'));
  t.match(await refused, { code: 'ALBEDO_SERVER_ERROR' });
  t.same(sent.at(-1)!.filter, { toolsListChanged: true }, 'list changes are still listened for, without the refused URI');
  // Subscribing again is a new subscribe (the URI was not kept).
  const again = l.subscribe(link, caps, 'fixture://bad', true);
  t.same(sent.at(-1)!.filter.resourceSubscriptions, ['fixture://bad']);
  l.acknowledged(acked(sent.at(-1)!.id));
  await again;
});

for (const kind of ['stdio', 'http'] as const) {
  t.test(`${kind}, modern: subscribes made at once are all acknowledged and routed`, async (t) => {
    const tag = newTag();
    const a = await albedoFor(t, tag);
    const c =
      kind === 'stdio'
        ? await a.connect(server(tag, FLOWS, ['--stdio', 'modern']))
        : await a.connect({ url: (await httpFixture(t, tag, FLOWS, ['--http', 'modern'])).url });
    t.equal(c.era, 'modern');
    const updates = new Set<string>();
    c.on('resource-updated', (uri) => updates.add(uri));
    const uris = ['fixture://one', 'fixture://two', 'fixture://three'];
    t.same(await Promise.all(uris.map((uri) => c.request({ method: 'resources/subscribe', uri }))), [{}, {}, {}]);
    for (const uri of uris) await c.callTool('touch', { uri });
    await until(() => updates.size === 3, 10_000, 'the updates');
    t.same([...updates].sort(), [...uris].sort());
  });
}
