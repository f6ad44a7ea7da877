import t from 'tap';
import { albedoFor, newTag, server, fixture, rejection, until, taggedPids } from '../helpers.ts';

t.test('crashing a transport worker mid-call: unknown outcome, others unaffected, worker back', async (t) => {
  const tag = newTag();
  const tagB = newTag();
  const a = await albedoFor(t, tag, { transportWorkers: 2 });
  const A = await a.connect(server(tag, fixture('sdk1-server.ts')));
  const B = await a.connect(server(tagB, fixture('sdk-server.ts')));
  t.teardown(async () => { await B.close(); });
  const slots = a.kernel.slots('transport');
  t.not(slots.find((s) => s.keys.includes(A.id))!.instance, slots.find((s) => s.keys.includes(B.id))!.instance, 'A and B live on different workers');
  const oldPids = taggedPids(tag);
  const inflight = A.callTool('sleep', { ms: 30_000 });
  await new Promise((r) => setTimeout(r, 200));
  a.faults.crash('transport', A.id);
  const e = await rejection(inflight);
  t.equal(e.code, 'ALBEDO_SERVICE_LOST');
  t.equal(e.outcome, 'unknown', 'the call is reported as an unknown outcome, not retried');
  t.equal((await B.callTool('echo', { text: 'unaffected' })).content[0].text, 'unaffected', 'the other worker\'s connection keeps working');
  await until(() => a.kernel.slots('transport').some((s) => s.incarnation === 2 && s.state === 'ready'), 10_000, 'the worker restarts');
  t.equal((await A.callTool('echo', { text: 'back' })).content[0].text, 'back', 'the next call reopens A on the new worker');
  // The server of the lost worker was shut down by its launcher (its lifeline closed with the worker).
  await until(() => oldPids.every((p) => !taggedPids(tag).includes(p)), 10_000, 'the old server to be reaped');
  t.pass('the old server process is gone');
});
