import t from 'tap';
import { until } from '../helpers.ts';
import { kernel } from './harness.ts';

// The restart budget a slot may spend before it fails: intensity 2 means the third crash within the period escalates.
const restart = (coolDownMs: number) => ({ intensity: 2, periodMs: 60_000, backoffMs: 20, maxBackoffMs: 200, coolDownMs });

t.test('a failed slot takes no keys while another is healthy, its keys move, and it returns after its cool-down', async (t) => {
  const { k, K, faults } = await kernel(t, { instances: 2, restart: restart(3_000) });
  const lost: any[] = [];
  const failed: any[] = [];
  const restarted: any[] = [];
  K.on('kernel', 'service/lost', (e) => lost.push(e));
  K.on('kernel', 'service/failed', (e) => failed.push(e));
  K.on('kernel', 'service/restarted', (e) => restarted.push(e));
  const bad = (await K.call('test', 'whoami', null, { key: 'a' })).instance as number;
  const good = (await K.call('test', 'whoami', null, { key: 'b' })).instance as number;
  t.not(bad, good, 'a and b start on different slots');
  const slot = (i: number) => k.slots('test' as never).find((s) => s.instance === i)!;

  for (let i = 1; i <= 3; i++) {
    await K.call('test', 'echo', i, { key: 'a', timeoutMs: 10_000 }); // queues until the slot is ready again
    faults.crash('test' as never, 'a');
    await until(() => lost.length === i, 10_000, `crash ${i}`);
  }
  await until(() => failed.length === 1, 10_000, 'escalation');
  const returnsBefore = restarted.filter((e) => e.instance === bad).length;
  t.equal(failed[0].instance, bad);
  t.same(failed[0].keys, ['a'], 'service/failed names the keys the slot held');
  t.equal(slot(bad).state, 'failed');
  t.equal(slot(bad).healthy, false);

  const moved = await K.call('test', 'whoami', null, { key: 'a' });
  t.equal(moved.instance, good, 'a key pinned to the failed slot moves to the healthy one on its next call');
  t.same(slot(bad).keys, [], 'and the failed slot no longer holds it');
  t.equal((await K.call('test', 'whoami', null, { key: 'c' })).instance, good, 'a new key goes to the healthy slot');
  for (let i = 0; i < 4; i++) t.equal((await K.call('test', 'whoami', null)).instance, good, 'keyless calls skip the failed slot');
  t.equal(restarted.filter((e) => e.instance === bad).length, returnsBefore, 'the checks above ran while the slot was down');
  t.equal(slot(bad).state, 'failed');

  await until(() => restarted.filter((e) => e.instance === bad).length > returnsBefore, 30_000, 'the failed slot to return');
  t.equal(slot(bad).state, 'ready');
  t.equal(slot(bad).healthy, true);
  t.equal(
    (await K.call('test', 'whoami', null, { key: 'd' })).instance,
    bad,
    'the returned slot takes new keys again (it holds the fewest)',
  );
  t.same(await K.call('test', 'echo', 'b still here', { key: 'b' }), 'b still here');
});

t.test('a cool-down retry that fails before it is ready fails the slot again at once, for another cool-down', async (t) => {
  // Incarnation 1 starts; from 2 on the service refuses to start.
  const { k, K, faults } = await kernel(t, { restart: restart(300), options: { failStartFrom: 2 } });
  const lost: any[] = [];
  const failed: number[] = []; // how many losses each failure came after
  K.on('kernel', 'service/lost', (e) => lost.push(e));
  K.on('kernel', 'service/failed', () => failed.push(lost.length));
  await K.call('test', 'echo', 1);
  faults.crash('test' as never);
  await until(() => failed.length === 1, 10_000, 'escalation');
  t.equal(failed[0], 3, 'a crash and two failed restarts spend the restart budget');
  await until(() => failed.length === 2, 10_000, 'the retry to fail');
  t.equal(failed[1], 4, 'the retry after the cool-down is one attempt, not a new budget');
  t.equal(lost[3].cause, 'uncaught_exception', 'a start that throws is a defect the lost event names');
  t.equal(k.slots('test' as never)[0].healthy, false);
});
