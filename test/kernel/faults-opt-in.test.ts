// Fault injection is opt-in (KernelOptions.faults, carried to every worker by
// WorkerBoot): without it a worker ignores `fault` envelopes and answers the
// test-only methods (`kernel/echo`, `worker/stats`) ALBEDO_NOT_FOUND, and the
// fault API refuses the kernel; with it the same envelope hangs the worker,
// and every worker, whatever its service, answers those methods.
import t from 'tap';
import { Kernel } from '../../kernel/kernel.ts';
import { Faults } from '../../kernel/faults.ts';
import { rejection } from '../helpers.ts';
import { spec } from './harness.ts';

function started(t: { teardown(fn: () => unknown): void }, faults: boolean): Kernel {
  const k = new Kernel({ faults });
  k.start(spec());
  t.teardown(() => k.stop(2_000));
  return k;
}

t.test('without faults: the fault API refuses the kernel, the test-only methods are not there', async (t) => {
  const k = started(t, false);
  t.equal(k.faults, false);
  const e = await rejection((async () => new Faults(k))());
  t.equal(e.code, 'ALBEDO_INVALID_ARGUMENT', 'no fault API over a kernel whose workers would ignore it');
  t.equal(await k.callAny('test', 'echo', 'ready'), 'ready');
  for (const method of ['kernel/echo', 'worker/stats']) {
    const err = await rejection(k.callAny('test', method, {}));
    t.equal(err.code, 'ALBEDO_NOT_FOUND', `${method} is not answered`);
    t.equal(err.outcome, 'not_run');
  }
});

t.test('without faults: a worker ignores a fault envelope', async (t) => {
  const k = started(t, false);
  await k.callAny('test', 'echo', 'ready');
  const lost: unknown[] = [];
  k.on('kernel', 'service/lost', (e) => lost.push(e));
  // The hang goes first in the same batch as the call: a worker that took it would never answer.
  k.slotOf('test' as never)!.fault('hang');
  t.equal(await k.callAny('test', 'echo', 'after the hang'), 'after the hang');
  k.slotOf('test' as never)!.fault('crash');
  t.equal(await k.callAny('test', 'echo', 'after the crash'), 'after the crash');
  t.equal(await k.callAny('test', 'echo', 'and after that'), 'and after that');
  t.same(lost, [], 'no worker was lost');
  t.equal(k.slots('test' as never)[0]!.incarnation, 1, 'the first incarnation still runs');
});

t.test('with faults: the same envelope hangs the worker, and every worker answers the test-only methods', async (t) => {
  const k = started(t, true);
  const faults = new Faults(k);
  t.same(await faults.echo('test' as never, { x: 1 }), { x: 1 }, 'kernel/echo answers its params');
  const stats = await faults.stats('test' as never, { gc: true });
  t.ok(stats.heapUsed > 0 && stats.rss > 0, 'worker/stats answers the heap');
  k.slotOf('test' as never)!.fault('hang');
  const e = await rejection(k.callAny('test', 'echo', 'after the hang'));
  t.equal(e.code, 'ALBEDO_SERVICE_LOST', 'the hung worker never answered; the liveness check ended it');
});

t.test('a crash or hang aimed at no worker is refused, not silently dropped', async (t) => {
  const faults = new Faults(started(t, true));
  t.throws(() => faults.crash('nope' as never), { code: 'ALBEDO_NOT_FOUND' }, 'a service that is not started');
  t.throws(() => faults.hang('test' as never, 'no-such-key'), { code: 'ALBEDO_NOT_FOUND' }, 'a key no worker holds');
});
