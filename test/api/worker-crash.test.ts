import t from 'tap';
import { albedoFor, newTag, server, fixture, rejection, until, taggedPids } from '../helpers.ts';
import type { Connection } from '../../api/connection.ts';
import type { LifecyclePayload } from '../../protocol/services/maps.ts';

t.test('crashing a transport worker mid-call: unknown outcome, others unaffected, worker back', async (t) => {
  const tag = newTag();
  const tagB = newTag();
  const a = await albedoFor(t, tag, { transportWorkers: 2, faults: true });
  const A = await a.connect(server(tag, fixture('sdk1-server.ts')));
  const B = await a.connect(server(tagB, fixture('sdk-server.ts')));
  t.teardown(async () => {
    await B.close();
  });
  const slots = a.kernel.slots('transport');
  t.not(
    slots.find((s) => s.keys.includes(A.id))!.instance,
    slots.find((s) => s.keys.includes(B.id))!.instance,
    'A and B live on different workers',
  );
  const oldPids = taggedPids(tag);
  const inflight = A.callTool('sleep', { ms: 30_000 });
  await new Promise((r) => setTimeout(r, 200));
  a.faults!.crash('transport', A.id);
  const e = await rejection(inflight);
  t.equal(e.code, 'ALBEDO_SERVICE_LOST');
  t.equal(e.outcome, 'unknown', 'the call is reported as an unknown outcome, not retried');
  t.equal((await B.callTool('echo', { text: 'unaffected' })).content[0].text, 'unaffected', "the other worker's connection keeps working");
  await until(() => a.kernel.slots('transport').some((s) => s.incarnation === 2 && s.state === 'ready'), 10_000, 'the worker restarts');
  t.equal((await A.callTool('echo', { text: 'back' })).content[0].text, 'back', 'the next call reopens A on the new worker');
  // The server of the lost worker was shut down by its launcher (its lifeline closed with the worker).
  await until(() => oldPids.every((p) => !taggedPids(tag).includes(p)), 10_000, 'the old server to be reaped');
  t.pass('the old server process is gone');
});

t.test(
  'a transport slot past its restart intensity: connections move to healthy workers, and it returns after its cool-down',
  async (t) => {
    const tag = newTag();
    // Long enough for the checks below to run while the slot is down (asserted, not assumed); the return is awaited by its event.
    const coolDownMs = 8_000;
    const a = await albedoFor(t, tag, {
      transportWorkers: 3,
      faults: true,
      supervision: { restart: { intensity: 2, periodMs: 60_000, backoffMs: 20, maxBackoffMs: 200, coolDownMs } },
    });
    const lost: LifecyclePayload[] = [];
    const failed: LifecyclePayload[] = [];
    const restarted: LifecyclePayload[] = [];
    a.kernel.on('kernel', 'service/lost', (e) => lost.push(e));
    a.kernel.on('kernel', 'service/failed', (e) => failed.push(e));
    a.kernel.on('kernel', 'service/restarted', (e) => restarted.push(e));
    const slots = () => a.kernel.slots('transport');
    const slotOf = (id: string) => slots().find((s) => s.keys.includes(id))!.instance;
    const echo = async (c: Connection, text: string) => (await c.callTool('echo', { text })).content[0].text;

    const A = await a.connect(server(tag, fixture('sdk-server.ts')), { name: 'a' });
    const B = await a.connect(server(tag, fixture('sdk-server.ts')), { name: 'b' });
    const bad = slotOf(A.id);
    t.not(slotOf(B.id), bad);
    // Three crashes inside the period: two restarts, then the slot fails.
    for (let i = 1; i <= 3; i++) {
      await until(() => slots()[bad].state === 'ready', 20_000, `slot ${bad} to be ready`);
      a.faults!.crash('transport', A.id);
      await until(() => lost.length === i, 20_000, `crash ${i}`);
    }
    await until(() => failed.length === 1, 20_000, 'service/failed');
    t.equal(failed[0].instance, bad);
    t.ok(failed[0].keys.includes(A.id), 'the failed slot held A');
    const returned = () => restarted.filter((e) => e.instance === bad && e.incarnation > failed[0].incarnation).length;

    t.equal(await echo(A, 'reopened'), 'reopened', 'A, stale since its worker was lost, reopens on a healthy worker');
    t.not(slotOf(A.id), bad);
    const C = await a.connect(server(tag, fixture('sdk-server.ts')), { name: 'c' });
    t.not(slotOf(C.id), bad, 'a new connection is not placed on the failed slot');
    t.equal(await echo(C, 'new'), 'new');
    t.equal(await echo(B, 'unaffected'), 'unaffected');
    t.equal(returned(), 0, 'the checks above ran while the slot was down');
    t.equal(slots()[bad].state, 'failed');

    await until(() => returned() === 1, coolDownMs + 60_000, 'the failed slot to return after its cool-down');
    t.equal(slots()[bad].healthy, true);
    const D = await a.connect(server(tag, fixture('sdk-server.ts')), { name: 'd' });
    t.equal(slotOf(D.id), bad, 'the returned slot is chosen again (it holds the fewest connections)');
    t.equal(await echo(D, 'back'), 'back');
    t.equal(await echo(A, 'still fine'), 'still fine');
  },
);
