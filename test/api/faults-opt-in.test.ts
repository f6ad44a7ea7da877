// Fault injection through the embedding API is opt-in: `createAlbedo({ faults: true })`
// gives `albedo.faults` and workers that take faults and answer the test-only
// methods; without it `albedo.faults` is undefined, a fault envelope that
// reaches a worker anyway changes nothing, and `kernel/echo` and
// `worker/stats` answer ALBEDO_NOT_FOUND as methods nobody has.
import t from 'tap';
import { createAlbedo } from '../../api/albedo.ts';
import type { LifecyclePayload } from '../../protocol/services/maps.ts';
import { albedoFor, fixture, newTag, rejection, server, until } from '../helpers.ts';

t.test('without the option: no albedo.faults, no test-only methods, fault envelopes ignored', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag, { transportWorkers: 1 });
  t.equal(a.faults, undefined, 'albedo.faults is undefined');
  t.equal(a.kernel.faults, false);
  const c = await a.connect(server(tag, fixture('sdk-server.ts')));
  for (const method of ['kernel/echo', 'worker/stats']) {
    const e = await rejection(a.kernel.callAny('transport', method, {}, { key: c.id }));
    t.equal(e.code, 'ALBEDO_NOT_FOUND', `${method} is not answered`);
    t.equal(e.outcome, 'not_run');
  }
  const lost: LifecyclePayload[] = [];
  a.kernel.on('kernel', 'service/lost', (e) => lost.push(e));
  // Posted straight to the slot (there is no fault API to do it): the hang goes ahead of the call, in one batch.
  a.kernel.slotOf('transport', c.id)!.fault('hang');
  t.match(await c.callTool('echo', { text: 'after the hang' }), { content: [{ text: 'after the hang' }] });
  a.kernel.slotOf('transport', c.id)!.fault('crash');
  await c.callTool('echo', { text: 'after the crash' });
  await c.callTool('echo', { text: 'and after that' });
  t.same(lost, [], 'no worker was lost');
  t.equal(a.kernel.slots('transport')[0]!.incarnation, 1, 'the first incarnation still runs');
});

t.test('with faults: true, albedo.faults crashes a worker and the test-only methods answer', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag, { transportWorkers: 1, faults: true });
  const faults = a.faults!;
  t.ok(faults, 'albedo.faults is there');
  const c = await a.connect(server(tag, fixture('sdk-server.ts')));
  t.same(await faults.echo('transport', { hop: 1 }, { key: c.id }), { hop: 1 }, 'kernel/echo');
  const stats = await faults.stats('transport', { gc: true }, { key: c.id });
  t.equal(stats.connections, 1, "worker/stats has the transport's own figure");
  t.ok(stats.heapUsed > 0);
  const lost: LifecyclePayload[] = [];
  a.kernel.on('kernel', 'service/lost', (e) => lost.push(e));
  faults.crash('transport', c.id);
  await until(() => lost.length === 1, 10_000, 'the crashed worker is lost');
  t.equal(lost[0]!.cause, 'uncaught_exception');
});

t.test('faults must be a boolean: anything else is refused before anything starts', async (t) => {
  const e = await rejection(createAlbedo({ home: null, faults: 'yes' as unknown as boolean }));
  t.equal(e.code, 'ALBEDO_INVALID_ARGUMENT');
});
