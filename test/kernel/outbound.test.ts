import t from 'tap';
import { rejection, until } from '../helpers.ts';
import { kernel } from './harness.ts';

/** A local service whose `wait` never answers: it only ends when its signal aborts, and records why. */
function host(K: { provide(name: string, h: Record<string, (p: any, ctx: { signal: AbortSignal }) => unknown>): () => void }) {
  const seen = { started: 0, aborted: [] as any[] };
  K.provide('host', {
    wait: (_p, ctx) =>
      new Promise((_resolve, reject) => {
        seen.started++;
        ctx.signal.addEventListener(
          'abort',
          () => {
            seen.aborted.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          },
          { once: true },
        );
      }),
  });
  return seen;
}

t.test("a worker that cancels its outbound call rejects at once, and the local handler's signal aborts", async (t) => {
  const { K } = await kernel(t);
  const seen = host(K);
  const out = await K.call('test', 'askAndCancel', { to: 'host', method: 'wait', when: 'after' }, { timeoutMs: 10_000 });
  t.same(out, { code: 'ALBEDO_DEADLINE', outcome: 'unknown' }, "ctx.call rejected with the caller's abort");
  await until(() => seen.aborted.length === 1, 5_000, 'the local handler to see its signal abort');
  t.equal(seen.started, 1);
  t.equal(seen.aborted[0].code, 'ALBEDO_DEADLINE');
});

t.test('an outbound call whose signal is already aborted is never sent', async (t) => {
  const { K } = await kernel(t);
  const seen = host(K);
  const out = await K.call('test', 'askAndCancel', { to: 'host', method: 'wait', when: 'before' }, { timeoutMs: 10_000 });
  t.same(out, { code: 'ALBEDO_DEADLINE', outcome: 'unknown' });
  t.equal(await K.call('test', 'echo', 'round trip'), 'round trip');
  t.equal(seen.started, 0, 'the local handler never ran');
  const pre = await rejection(K.call('host', 'wait', null, { signal: AbortSignal.abort() }));
  t.equal(pre.code, 'ALBEDO_DEADLINE', 'nor does a local handler whose caller already gave up');
  t.equal(pre.outcome, 'not_run');
  t.equal(seen.started, 0);
});

t.test('cancelling a call cancels what its handler waits on: the signal crosses the worker to the local handler', async (t) => {
  const { K } = await kernel(t);
  const seen = host(K);
  const ac = new AbortController();
  const call = K.call('test', 'ask', { to: 'host', method: 'wait' }, { signal: ac.signal, timeoutMs: 30_000 });
  await until(() => seen.started === 1, 5_000, 'the local handler to start');
  ac.abort();
  t.equal((await rejection(call)).code, 'ALBEDO_DEADLINE');
  await until(() => seen.aborted.length === 1, 5_000, 'the local handler to see its signal abort');
});

t.test('a worker lost mid-outbound aborts the outbound calls it made', async (t) => {
  const { K, faults } = await kernel(t);
  const seen = host(K);
  const restarted: any[] = [];
  K.on('kernel', 'service/restarted', (e) => restarted.push(e));
  const call = K.call('test', 'ask', { to: 'host', method: 'wait' }, { timeoutMs: 30_000 });
  await until(() => seen.started === 1, 5_000, 'the local handler to start');
  faults.crash('test' as never);
  t.equal((await rejection(call)).code, 'ALBEDO_SERVICE_LOST');
  await until(() => seen.aborted.length === 1, 5_000, 'the local handler to see its signal abort');
  t.equal(seen.aborted[0].code, 'ALBEDO_SERVICE_LOST', 'its signal says the calling worker was lost');
  await until(() => restarted.length === 1, 5_000, 'restart');
  t.same(await K.call('test', 'echo', 'back'), 'back');
});
