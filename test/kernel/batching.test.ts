// Batching across the thread boundary (issue 14): the envelopes posted in one
// turn of the event loop cross as one message each way, in order; every call
// in a batch keeps its own deadline and its own cancellation; a call
// abandoned before its batch was flushed is never delivered; a worker that
// dies mid-batch fails exactly the calls that batch delivered, as unknown
// outcomes; one envelope that cannot be cloned fails alone.
import t from 'tap';
import { AlbedoError } from '../../protocol/errors.ts';
import { rejection, until } from '../helpers.ts';
import { kernel } from './harness.ts';

// No heartbeat during a test: a ping and its pong are messages of their own, and these tests count messages.
const quiet = { heartbeat: { intervalMs: 600_000, timeoutMs: 1_200_000 } };

t.test('the calls made in one turn cross as one message, and their replies as one', async (t) => {
  const { k, K } = await kernel(t, quiet);
  await K.call('test', 'echo', 'warm');
  const wire = k.slotOf('test' as never)!.wire;
  const before = { ...wire };
  const values = await Promise.all(Array.from({ length: 32 }, (_, i) => K.call('test', 'echo', { i })));
  t.same(
    values,
    Array.from({ length: 32 }, (_, i) => ({ i })),
    'every call answered with its own value',
  );
  t.equal(wire.messagesOut - before.messagesOut, 1, 'one message to the worker');
  t.equal(wire.envelopesOut - before.envelopesOut, 32, 'holding the 32 calls');
  t.equal(wire.messagesIn - before.messagesIn, 1, 'one message back');
  t.equal(wire.envelopesIn - before.envelopesIn, 32, 'holding the 32 replies');

  // Pipelined: 32 callers each making their next call when the last is answered; each round is one message each way.
  const piped = { ...wire };
  await Promise.all(
    Array.from({ length: 32 }, async (_, c) => {
      for (let r = 0; r < 10; r++) await K.call('test', 'echo', c * 100 + r);
    }),
  );
  t.equal(wire.envelopesOut - piped.envelopesOut, 320, '320 calls');
  t.equal(wire.messagesOut - piped.messagesOut, 10, 'in 10 messages: the calls each round of replies led to went together');
  t.equal(wire.messagesIn - piped.messagesIn, 10, 'and their replies in 10');

  // Calls made in different turns are different messages.
  const spread = { ...wire };
  for (let i = 0; i < 3; i++) await K.call('test', 'echo', i);
  t.equal(wire.messagesOut - spread.messagesOut, 3, 'a call per turn: a message per call');
});

t.test('order: calls reach the handlers, and replies their callers, in the order they were made', async (t) => {
  const { K } = await kernel(t, quiet);
  const resolved: number[] = [];
  await Promise.all(
    Array.from({ length: 50 }, (_, n) =>
      K.call('test', 'record', { n }).then(() => {
        resolved.push(n);
      }),
    ),
  );
  // A second batch, made after the first was answered, comes after it.
  await Promise.all(
    [50, 51, 52].map((n) =>
      K.call('test', 'record', { n }).then(() => {
        resolved.push(n);
      }),
    ),
  );
  const order = Array.from({ length: 53 }, (_, n) => n);
  t.same(await K.call('test', 'recorded', null), order, 'the handlers saw the calls in order');
  t.same(resolved, order, 'the callers got their replies in order');

  // An event emitted before a reply, in the same batch back, is heard before the reply resolves.
  const seen: string[] = [];
  K.on('test', 'thing/happened', () => seen.push('event'));
  await Promise.all([K.call('test', 'announce', 1).then(() => seen.push('reply')), K.call('test', 'echo', 2)]);
  t.same(seen, ['event', 'reply'], 'the event first, as it was emitted');

  // An event emitted after a reply, in the same batch: the caller resumes first, as when each was a message of its own.
  const after: string[] = [];
  K.on('test', 'thing/happened', (p) => {
    if (p === 'late') after.push('event');
  });
  await K.call('test', 'announceAfter', 'late');
  after.push('reply');
  await until(() => after.length === 2, 30_000, 'the event');
  t.same(after, ['reply', 'event'], "the caller ran before the event's listeners");
});

t.test('deadlines: each call of a batch keeps its own', async (t) => {
  const { K } = await kernel(t, quiet);
  const [short, long] = (await Promise.all([
    K.call('test', 'deadlineOf', null, { timeoutMs: 5_000 }),
    K.call('test', 'deadlineOf', null, { timeoutMs: 50_000 }),
  ])) as [number, number];
  t.ok(Math.abs(long - short - 45_000) <= 50, "the worker got each call's own absolute deadline");

  const before = (await K.call('test', 'stats', null)) as { cancelled: number };
  const slow = K.call('test', 'record', { n: 1, ms: 600_000 }, { timeoutMs: 300 });
  const quick = K.call('test', 'record', { n: 2, ms: 10 }, { timeoutMs: 60_000 });
  const sync = K.call('test', 'echo', 3, { timeoutMs: 60_000 });
  const err = await rejection(slow);
  t.equal(err.code, 'ALBEDO_DEADLINE', 'the call past its deadline fails');
  t.equal(err.outcome, 'unknown', 'as an unknown outcome: it was delivered');
  t.equal(await quick, 2, 'the others in its batch are answered');
  t.equal(await sync, 3);
  await until(
    async () => ((await K.call('test', 'stats', null)) as { cancelled: number }).cancelled === before.cancelled + 1,
    30_000,
    'the worker to abort the expired call',
  );
  t.pass("the worker was told, and aborted that call's signal");
});

t.test('cancellation: a call abandoned before its batch left is never delivered; after, it is aborted', async (t) => {
  const { k, K } = await kernel(t, quiet);
  await K.call('test', 'echo', 'warm');
  const wire = k.slotOf('test' as never)!.wire;
  const before = { ...wire };
  const ac = new AbortController();
  const dropped = K.call('test', 'record', { n: 1, ms: 600_000 }, { signal: ac.signal });
  const kept = K.call('test', 'record', { n: 2 });
  ac.abort(); // in the same turn: the batch has not been flushed yet
  const err = await rejection(dropped);
  t.equal(err.code, 'ALBEDO_DEADLINE', 'the abandoned call rejects');
  t.equal(await kept, 2, 'the other call of the batch is answered');
  t.same(await K.call('test', 'recorded', null), [2], 'the abandoned call never reached the worker');
  t.equal(wire.envelopesOut - before.envelopesOut, 2, 'nor was a cancel sent for it (the kept call and the recorded query)');

  // Cancelled once delivered: the worker's handler sees its signal abort; its batch-mates go on.
  const stats0 = (await K.call('test', 'stats', null)) as { cancelled: number };
  const ac2 = new AbortController();
  const running = K.call('test', 'record', { n: 3, ms: 600_000 }, { signal: ac2.signal });
  const mate = K.call('test', 'record', { n: 4, ms: 20 });
  await until(async () => ((await K.call('test', 'recorded', null)) as number[]).includes(3), 30_000, 'call 3 to arrive');
  ac2.abort();
  t.equal((await rejection(running)).outcome, 'unknown', 'a delivered call, cancelled: unknown outcome');
  t.equal(await mate, 4, 'its batch-mate is answered');
  await until(
    async () => ((await K.call('test', 'stats', null)) as { cancelled: number }).cancelled === stats0.cancelled + 1,
    30_000,
    'the handler to see the abort',
  );
  t.pass('the handler saw its signal abort');
});

t.test('a crash mid-batch fails exactly the calls that batch delivered, as unknown outcomes', async (t) => {
  const { K } = await kernel(t, quiet);
  const earlier = await Promise.all([K.call('test', 'echo', 'a'), K.call('test', 'echo', 'b')]);
  t.same(earlier, ['a', 'b'], 'an earlier batch was answered');
  const lost: unknown[] = [];
  K.on('kernel', 'service/lost', (e) => lost.push(e));
  const batch = [
    K.call('test', 'echo', 1),
    K.call('test', 'record', { n: 1 }),
    K.call('test', 'crashSoon', null),
    K.call('test', 'echo', 2),
    K.call('test', 'record', { n: 2, ms: 600_000 }),
  ];
  const errors = await Promise.all(batch.map((p) => rejection(p)));
  t.same(
    errors.map((e) => [e.code, e.outcome]),
    batch.map(() => ['ALBEDO_SERVICE_LOST', 'unknown']),
    'every call of the batch, answered in the worker or not, fails as unknown: its reply never crossed',
  );
  t.equal(lost.length, 1, 'one loss');
  // A call made after the loss runs on the next incarnation.
  const who = (await K.call('test', 'whoami', null)) as { incarnation: number };
  t.equal(who.incarnation, 2, 'the next call is served by the restarted worker');
  t.equal(await K.call('test', 'echo', 'after'), 'after');
});

t.test('an envelope that cannot be cloned fails alone; its batch-mates cross', async (t) => {
  const { K } = await kernel(t, quiet);
  const [a, bad, b] = [K.call('test', 'echo', 'a'), K.call('test', 'echo', { f: () => 1 }), K.call('test', 'echo', 'b')];
  const err = await rejection(bad);
  t.equal(err.code, 'ALBEDO_INVALID_ARGUMENT', 'params that cannot be cloned: a clear error');
  t.equal(err.outcome, 'not_run', 'and the call was not run');
  t.same([await a, await b], ['a', 'b'], 'the calls with it in the batch were sent and answered');

  const [c, unclonable, d] = [K.call('test', 'echo', 'c'), K.call('test', 'unclonable', null), K.call('test', 'echo', 'd')];
  const err2 = await rejection(unclonable);
  t.ok(err2 instanceof AlbedoError && err2.code === 'ALBEDO_INTERNAL', 'a reply that cannot cross is an internal error');
  t.equal(err2.outcome, 'unknown', 'whose outcome is unknown (the handler ran)');
  t.same([await c, await d], ['c', 'd'], 'the replies with it in the batch crossed');
});
