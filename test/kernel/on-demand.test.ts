// A shared pool starts its first worker with the service and each further
// one when placement first needs it (issue 14: a process that uses one
// connection pays for one worker). Placement is unchanged: as if the whole
// pool ran, a new key goes to a slot holding none, keyless calls take turns,
// and dedicated slots are numbered after the pool's.
import t from 'tap';
import { kernel } from './harness.ts';

const instances = (k: { slots(s: never): ReadonlyArray<{ instance: number }> }): number[] =>
  k.slots('test' as never).map((s) => s.instance);

t.test('a pool of three: one worker at start, the next when every started one holds a key', async (t) => {
  const { k, K } = await kernel(t, { instances: 3 });
  t.same(instances(k), [0], 'only the first worker starts with the service');
  t.equal((await K.call('test', 'whoami', null, { key: 'a' })).instance, 0);
  t.same(instances(k), [0], 'the first key takes the started worker');
  t.equal((await K.call('test', 'whoami', null, { key: 'a' })).instance, 0, 'a pinned key starts nothing');
  t.same(instances(k), [0]);
  t.equal((await K.call('test', 'whoami', null, { key: 'b' })).instance, 1, 'a second key starts the second worker');
  t.same(instances(k), [0, 1]);
  await k.release('test' as never, 'a');
  t.equal((await K.call('test', 'whoami', null, { key: 'c' })).instance, 0, 'a started worker holding no key is chosen before a new one');
  t.same(instances(k), [0, 1]);
  t.equal(
    (await K.call('test', 'whoami', null, { key: 'solo', isolate: true })).instance,
    3,
    'a dedicated slot is numbered after the pool',
  );
  t.equal((await K.call('test', 'whoami', null, { key: 'd' })).instance, 2, 'the third shared worker keeps its number');
  t.same(instances(k), [0, 1, 2, 3], "the pool's slots come first, by instance");
});

t.test('keyless calls take turns over the pool: a turn that falls on a worker not started yet starts it', async (t) => {
  const { k, K } = await kernel(t, { instances: 2 });
  t.same(instances(k), [0]);
  const seen: number[] = [];
  for (let i = 0; i < 4; i++) seen.push((await K.call('test', 'whoami', null)).instance);
  t.same(seen, [0, 1, 0, 1]);
  t.same(instances(k), [0, 1]);
});
