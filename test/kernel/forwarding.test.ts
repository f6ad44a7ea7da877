import t from 'tap';
import { until } from '../helpers.ts';
import { kernel, spec } from './harness.ts';
import type { Topic } from '../../protocol/services/maps.ts';

t.test('a worker hears the events its spec subscribes to, in order, and no others', async (t) => {
  const { k, K, faults } = await kernel(t);
  // The test service's topic is in no map (the kernel forwards any topic it is given).
  k.start(spec({ name: 'listener', subscribe: ['test:thing/happened' as Topic, 'kernel:service/lost'] }));
  k.start(spec({ name: 'deaf' }));
  // Events are news: a worker still starting misses them. Both answer once they are ready.
  t.same(await K.call('listener', 'heard', null), []);
  t.same(await K.call('deaf', 'heard', null), []);
  for (let i = 0; i < 5; i++) await K.call('test', 'announce', { n: i });
  await until(async () => (await K.call('listener', 'heard', null)).length === 5, 10_000, 'the five events to be forwarded');
  const heard = await K.call('listener', 'heard', null);
  t.same(
    heard.map((h: any) => h.payload.n),
    [0, 1, 2, 3, 4],
    'in the order they were published',
  );
  t.same(await K.call('deaf', 'heard', null), [], 'a service that did not subscribe hears nothing');
  faults.crash('test' as never);
  await until(
    async () => (await K.call('listener', 'heard', null)).some((h: any) => h.topic === 'kernel:service/lost'),
    10_000,
    'the loss',
  );
  const lost = (await K.call('listener', 'heard', null)).find((h: any) => h.topic === 'kernel:service/lost');
  t.equal(lost.payload.service, 'test', "the kernel's own lifecycle events are forwarded too");
  t.equal(lost.payload.cause, 'uncaught_exception');
});

t.test("a worker's outbound call pinned to a key reaches the slot that holds it, and its release frees the slot", async (t) => {
  const { k, K } = await kernel(t);
  k.start(spec({ name: 'actors' }));
  const a = await K.call('test', 'askKeyed', { to: 'actors', method: 'whoami', key: 'actor-1', isolate: true });
  const b = await K.call('test', 'askKeyed', { to: 'actors', method: 'whoami', key: 'actor-1' });
  t.equal(a.instance, 1, 'an isolated key got a worker of its own (the shared slot is instance 0)');
  t.equal(b.instance, a.instance, 'the next call with the key goes to the same worker');
  t.same(k.slots('actors' as never).find((s) => s.instance === 1)?.keys, ['actor-1']);
  const viaKernel = await K.call('actors', 'whoami', null, { key: 'actor-1' });
  t.equal(viaKernel.instance, a.instance, "the main thread's calls with the key find the same placement");
  await K.call('test', 'release', { service: 'actors', key: 'actor-1' });
  await until(() => k.slots('actors' as never).length === 1, 10_000, 'the dedicated slot to stop once its key is released');
});
