// What `kernel.start` refuses, and that a refused start leaves nothing
// behind: a pool size that is not a positive whole number (a pool of none
// has no worker to place a call on), a name a local service already has, and
// options a worker thread cannot take. The name stays free for a start that
// is right. And the worker host refuses a module whose default export names
// no service, as it refuses one defined for another service.
import t from 'tap';
import { Kernel } from '../../kernel/kernel.ts';
import { fixture, rejection } from '../helpers.ts';
import { spec } from './harness.ts';

function kernel(t: { teardown(fn: () => unknown): void }): Kernel {
  const k = new Kernel();
  t.teardown(() => k.stop(2_000));
  return k;
}

t.test('a pool size that is not a positive whole number is refused, and the name stays free', async (t) => {
  const k = kernel(t);
  for (const instances of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '2' as unknown as number]) {
    t.throws(() => k.start(spec({ instances })), { code: 'ALBEDO_INVALID_ARGUMENT' }, `instances: ${String(instances)}`);
    const e = await rejection(k.callAny('test', 'echo', 1));
    t.equal(e.code, 'ALBEDO_SERVICE_UNKNOWN', `instances: ${String(instances)}: nothing was started`);
  }
  k.start(spec({ instances: 2 }));
  t.equal(await k.callAny('test', 'echo', 'right'), 'right', 'a right start under the same name');
});

t.test('options a worker thread cannot take are refused, and nothing is left registered', async (t) => {
  const k = kernel(t);
  t.throws(() => k.start(spec({ options: { onReady: () => {} } })));
  const e = await rejection(k.callAny('test', 'echo', 1));
  t.equal(e.code, 'ALBEDO_SERVICE_UNKNOWN', 'no service under that name');
  k.start(spec({ options: { plain: true } }));
  t.equal(await k.callAny('test', 'echo', 'right'), 'right');
});

t.test('a name a local service has is refused, as provide refuses a started one', async (t) => {
  const k = kernel(t);
  k.provide('host', { 'host/drain': async () => ({}) });
  t.throws(() => k.start(spec({ name: 'host' })), { code: 'ALBEDO_INVALID_ARGUMENT' });
  t.same(await k.call('host', 'host/drain', { ids: [] }), {}, 'the local service still answers');
  t.same(k.slots('host'), [], 'no worker was started');
});

t.test('a module whose default export names no service does not start', async (t) => {
  const k = kernel(t);
  const lost: Array<{ service: string; reason: string }> = [];
  k.on('kernel', 'service/lost', (e) => lost.push(e));
  k.start({ name: 'catalogue', module: fixture('services/unnamed-catalogue.ts'), restart: { intensity: 0 } });
  const e = await rejection(k.call('catalogue', 'catalogue/profiles', {}));
  t.match(e, { code: 'ALBEDO_SERVICE_FAILED', outcome: 'not_run' }, 'its worker never became ready');
  t.match(lost, [{ service: 'catalogue' }], 'the start failed, as a defect');
});
