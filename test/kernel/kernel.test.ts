import t from 'tap';
import { Kernel } from '../../kernel/kernel.ts';
import { rejection, until } from '../helpers.ts';
import { kernel, spec, type Loose } from './harness.ts';

t.test('calls are routed to a worker and answered; options and identity reach it', async (t) => {
  const { K } = await kernel(t, { options: { hello: 'world' } });
  t.same(await K.call('test', 'echo', { a: [1, 2, 3] }), { a: [1, 2, 3] });
  t.same(await K.call('test', 'whoami', null), { instance: 0, incarnation: 1, options: { hello: 'world' } });
});

t.test('errors keep their code; unknown services and methods are specific errors', async (t) => {
  const { K } = await kernel(t);
  t.equal((await rejection(K.call('test', 'fail', null))).code, 'ALBEDO_INVALID_ARGUMENT');
  t.equal((await rejection(K.call('test', 'nope', null))).code, 'ALBEDO_NOT_FOUND');
  t.equal((await rejection(K.call('nosuch', 'echo', null))).code, 'ALBEDO_SERVICE_UNKNOWN');
});

t.test('a method named like an Object.prototype member is not found, in a worker and in a local service', async (t) => {
  const { K } = await kernel(t);
  K.provide('host', { hello: () => 'hi' });
  for (const method of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
    const inWorker = await rejection(K.call('test', method, { x: 1 }));
    t.equal(inWorker.code, 'ALBEDO_NOT_FOUND', `${method} in a worker`);
    t.equal(inWorker.outcome, 'not_run');
    const local = await rejection(K.call('host', method, { x: 1 }));
    t.equal(local.code, 'ALBEDO_NOT_FOUND', `${method} in a local service`);
    t.equal(local.outcome, 'not_run');
    const viaWorker = await rejection(K.call('test', 'forward', { to: 'host', method, params: 1 }));
    t.equal(viaWorker.code, 'ALBEDO_NOT_FOUND', `${method} called by a worker on a local service`);
  }
  t.equal(await K.call('host', 'hello', null), 'hi', 'own handlers still answer');
  const [slot] = (K as unknown as Kernel).slots('test' as never);
  t.equal(slot.incarnation, 1, 'no worker was restarted');
});

t.test('a rejection nobody handles in a worker is a defect: the worker is lost, and service/lost names it', async (t) => {
  const { k, K } = await kernel(t);
  const lost: any[] = [];
  const restarted: any[] = [];
  K.on('kernel', 'service/lost', (e) => lost.push(e));
  K.on('kernel', 'service/restarted', (e) => restarted.push(e));
  await K.call('test', 'leak', null).catch(() => {}); // its reply may or may not beat the worker's exit
  await until(() => lost.length === 1, 5_000, 'service/lost');
  t.equal(lost[0].cause, 'unhandled_rejection', 'the lost event says it was an unhandled rejection');
  await until(() => restarted.length === 1, 5_000, 'restart');
  t.equal(k.slots('test' as never)[0].incarnation, 2);
  t.same(await K.call('test', 'echo', 'clean again'), 'clean again');
});

t.test('every call has a deadline; the worker is told to abort', async (t) => {
  const { K } = await kernel(t);
  const cold = new Kernel();
  cold.start(spec());
  const early = await rejection((cold as unknown as Loose).call('test', 'echo', 1, { timeoutMs: 1 }));
  t.equal(early.outcome, 'not_run', 'a call that never reached a worker certainly did not run');
  await cold.stop(1_000);
  await K.call('test', 'echo', 'warm');
  const e = await rejection(K.call('test', 'sleep', { ms: 10_000 }, { timeoutMs: 100 }));
  t.equal(e.code, 'ALBEDO_DEADLINE');
  t.equal(e.outcome, 'unknown');
  let stats = { cancelled: 0 };
  await until(() => false, 0).catch(() => {});
  for (let i = 0; i < 50 && stats.cancelled === 0; i++) {
    stats = await K.call('test', 'stats', null);
    if (!stats.cancelled) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(stats.cancelled, 1, 'the handler saw its signal abort');
});

t.test('a crash fails in-flight calls as service lost, the worker restarts, calls work again', async (t) => {
  const { k, K, faults } = await kernel(t);
  const lost: any[] = [];
  const restarted: any[] = [];
  K.on('kernel', 'service/lost', (e) => lost.push(e));
  K.on('kernel', 'service/restarted', (e) => restarted.push(e));
  await K.call('test', 'echo', 1, { key: 'actor-1' });
  const inflight = K.call('test', 'sleep', { ms: 10_000 }, { key: 'actor-1' });
  await new Promise((r) => setTimeout(r, 50));
  faults.crash('test' as never, 'actor-1');
  const e = await rejection(inflight);
  t.equal(e.code, 'ALBEDO_SERVICE_LOST');
  t.equal(e.outcome, 'unknown');
  await until(() => restarted.length === 1, 5_000, 'restart');
  t.same(lost[0].keys, ['actor-1'], 'the lost event names the actors the worker held');
  t.equal(lost[0].cause, 'uncaught_exception', 'the lost event says it was an uncaught exception');
  t.same(restarted[0].keys, ['actor-1']);
  t.equal(k.slots('test' as never)[0].incarnation, 2);
  t.same(await K.call('test', 'echo', 'again', { key: 'actor-1' }), 'again');
});

t.test('a hung worker is found by the heartbeat and restarted', async (t) => {
  const { K, faults } = await kernel(t);
  const restarted: any[] = [];
  K.on('kernel', 'service/restarted', (e) => restarted.push(e));
  await K.call('test', 'echo', 1);
  const inflight = K.call('test', 'sleep', { ms: 10_000 }, { timeoutMs: 20_000 });
  faults.hang('test' as never);
  const e = await rejection(inflight);
  t.equal(e.code, 'ALBEDO_SERVICE_LOST');
  t.match(e.message, /unresponsive/);
  await until(() => restarted.length === 1, 5_000, 'restart');
  t.same(await K.call('test', 'echo', 'alive'), 'alive');
});

t.test('a restart storm escalates: past the intensity the slot fails, and with no other slot calls fail fast', async (t) => {
  const { k, K, faults } = await kernel(t);
  const failed: any[] = [];
  K.on('kernel', 'service/failed', (e) => failed.push(e));
  for (let i = 0; i < 4; i++) {
    await K.call('test', 'echo', i, { timeoutMs: 5_000 });
    faults.crash('test' as never);
    await until(() => k.slots('test' as never)[0].state !== 'ready', 5_000, 'crash');
  }
  await until(() => failed.length === 1, 5_000, 'escalation');
  t.equal(k.slots('test' as never)[0].state, 'failed');
  for (const opts of [{}, { key: 'new-key' }]) {
    const e = await rejection(K.call('test', 'echo', 'x', { timeoutMs: 60_000, ...opts }));
    t.equal(e.code, 'ALBEDO_SERVICE_FAILED');
    t.equal(e.outcome, 'not_run', 'refused before it ran, not left waiting for the deadline');
  }
});

t.test('keys spread over the pool; isolate gives a worker of its own, released on release', async (t) => {
  const { k, K } = await kernel(t, { instances: 2 });
  const a = await K.call('test', 'whoami', null, { key: 'a' });
  const b = await K.call('test', 'whoami', null, { key: 'b' });
  t.not(a.instance, b.instance, 'two keys land on two workers');
  const iso = await K.call('test', 'whoami', null, { key: 'solo', isolate: true });
  t.equal(iso.instance, 2);
  t.equal(k.slots('test' as never).length, 3);
  await k.release('test' as never, 'solo');
  t.equal(k.slots('test' as never).length, 2, 'the dedicated worker is stopped');
});

t.test('fault injection: delay and drop act on the supervised path', async (t) => {
  const { K, faults } = await kernel(t);
  const undoDrop = faults.drop({ service: 'test' as never, method: 'echo' }, 1);
  const e = await rejection(K.call('test', 'echo', 1, { timeoutMs: 200 }));
  t.equal(e.code, 'ALBEDO_DEADLINE');
  t.same(await K.call('test', 'echo', 2), 2, 'only the first matching call was dropped');
  undoDrop();
  const undoDelay = faults.delay({ service: 'test' as never }, 300);
  const late = await rejection(K.call('test', 'echo', 3, { timeoutMs: 100 }));
  t.equal(late.code, 'ALBEDO_DEADLINE', 'a delayed call misses a deadline shorter than the delay');
  undoDelay();
  t.same(await K.call('test', 'echo', 4, { timeoutMs: 1_000 }), 4);
});

t.test('events fan out; services call each other through the kernel', async (t) => {
  const { k, K } = await kernel(t);
  k.start({ ...spec(), name: 'other' });
  const seen: unknown[] = [];
  K.on('test', 'thing/happened', (p) => seen.push(p));
  await K.call('test', 'announce', { x: 1 });
  await until(() => seen.length === 1, 2_000, 'event');
  t.same(seen, [{ x: 1 }]);
  t.same(await K.call('test', 'forward', { to: 'other', method: 'echo', params: 'via kernel' }), 'via kernel');
  t.equal((await rejection(K.call('test', 'forward', { to: 'missing', method: 'echo', params: 1 }))).code, 'ALBEDO_SERVICE_UNKNOWN');
});
