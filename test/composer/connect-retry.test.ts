// The connect-retry controller (services/composer/connect-retry.ts) with an injected clock, random and sleep: which
// failures are retried, the capped exponential backoff with jitter, Retry-After honoured above the cap and up to
// the episode's window, one episode shared by concurrent dials, and participants that leave.
import t from 'tap';
import { AlbedoError } from '../../protocol/errors.ts';
import { CONNECT_RETRY, ConnectRetry, retryAfterOf, retryCause, type RetryProgress } from '../../services/composer/connect-retry.ts';
import { rejection } from '../helpers.ts';

const http = (status: number, retryAfterMs?: number): AlbedoError =>
  new AlbedoError('ALBEDO_HTTP_ERROR', `HTTP ${status}`, {
    outcome: status >= 500 ? 'unknown' : 'not_run',
    data: retryAfterMs === undefined ? { status, body: '' } : { status, body: '', retryAfterMs },
  });
const refused = (): AlbedoError =>
  new AlbedoError('ALBEDO_CONNECTION_CLOSED', 'cannot reach', { outcome: 'not_run', data: { errno: 'ECONNREFUSED' } });

/** A fake clock, random and sleep: each sleep is recorded and moves the clock; `hold` keeps sleeps waiting until released. */
function harness(opts: { random?: number; hold?: boolean } = {}) {
  const h = {
    t: 1_000_000,
    sleeps: [] as number[],
    signals: [] as AbortSignal[],
    release: [] as Array<() => void>,
  };
  const retry = new ConnectRetry<string>({
    now: () => h.t,
    random: () => opts.random ?? 0,
    sleep: async (ms, signal) => {
      h.sleeps.push(ms);
      h.signals.push(signal);
      if (opts.hold) {
        await new Promise<void>((r) => {
          h.release.push(r);
          signal.addEventListener('abort', () => r(), { once: true });
        });
      }
      h.t += ms;
    },
  });
  return { ...h, h, retry };
}

/** An attempt that fails with `errors` in turn, then answers `ok`; it counts its calls. */
function script(errors: AlbedoError[], ok = 'open') {
  const s = {
    calls: 0,
    attempt: async (): Promise<string> => {
      const e = errors[s.calls++];
      await new Promise((r) => setImmediate(r));
      if (e) throw e;
      return ok;
    },
  };
  return s;
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('which failures are retried (the transport codes as typed causes)', async (t) => {
  const cases: Array<[AlbedoError, string | null]> = [
    [refused(), 'network'],
    [new AlbedoError('ALBEDO_STREAM_BROKEN', 'reset', { data: { errno: 'ECONNRESET' } }), 'network'],
    [new AlbedoError('ALBEDO_STREAM_BROKEN', 'tls', { data: { errno: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' } }), null],
    [new AlbedoError('ALBEDO_STREAM_BROKEN', 'the stream ended'), 'closed'],
    [new AlbedoError('ALBEDO_SERVER_EXITED', 'exited', { data: { exit: 1 } }), 'closed'],
    [new AlbedoError('ALBEDO_SESSION_EXPIRED', '404'), 'closed'],
    [new AlbedoError('ALBEDO_TIMEOUT', 'no answer'), 'timeout'],
    [http(408), 'http'],
    [http(429), 'http'],
    [http(500), 'http'],
    [http(503), 'http'],
    [new AlbedoError('ALBEDO_HANDSHAKE_FAILED', 'initialized refused', { data: { status: 502, body: '' } }), 'http'],
    [http(400), null],
    [http(401), null],
    [http(403), null],
    [http(404), null],
    [new AlbedoError('ALBEDO_HANDSHAKE_FAILED', 'no common version'), null],
    [new AlbedoError('ALBEDO_NEEDS_SIGN_IN', 'sign in'), null],
    [new AlbedoError('ALBEDO_SIGN_IN_FAILED', 'bad state'), null],
    [new AlbedoError('ALBEDO_SPAWN_FAILED', 'ENOENT', { data: { errno: 'ENOENT' } }), null],
    [new AlbedoError('ALBEDO_ERA_REFUSED', 'versions'), null],
    [new AlbedoError('ALBEDO_INVALID_RESPONSE', 'bad'), null],
    [new AlbedoError('ALBEDO_SERVER_ERROR', 'the server said no', { data: { code: -32603 } }), null],
    [new AlbedoError('ALBEDO_CATALOGUE_TOO_LARGE', 'big'), null],
    [new AlbedoError('ALBEDO_DEADLINE', 'gave up'), null],
    [new AlbedoError('ALBEDO_SERVICE_LOST', 'worker lost'), null],
  ];
  for (const [e, cause] of cases) t.equal(retryCause(e), cause, `${e.code} ${JSON.stringify(e.data ?? null)}`);
  t.equal(retryAfterOf(http(503, 2_000)), 2_000);
  t.equal(retryAfterOf(http(401, 2_000)), undefined, 'a hint with a final status is not one');
  t.equal(retryAfterOf(http(503)), undefined);
});

t.test('a failure that may pass: capped exponential backoff with jitter, then success', async (t) => {
  for (const [random, expected] of [
    [0, [1_000, 2_000]],
    [0.5, [750, 1_500]],
    [0.999, [500, 1_001]],
  ] as const) {
    const h = harness({ random });
    const s = script([http(503), refused()]);
    const seen: RetryProgress[] = [];
    t.equal(await h.retry.open('fp', { attempt: s.attempt, progress: (p) => seen.push(p) }, true), 'open');
    t.equal(s.calls, 3, 'three attempts');
    t.same(h.sleeps, expected, `random ${random}: each wait between half and all of the doubled backoff`);
    t.same(
      seen.map((p) => [p.attempt, p.of, p.delayMs, p.code, p.cause]),
      [
        [2, 4, expected[0], 'ALBEDO_HTTP_ERROR', 'http'],
        [3, 4, expected[1], 'ALBEDO_CONNECTION_CLOSED', 'network'],
      ],
      'progress before each wait',
    );
    t.equal(seen[0]!.nextAt, 1_000_000 + expected[0], 'when the next attempt starts');
    t.notOk(h.retry.running('fp'), 'the episode is over');
  }

  const capped = new ConnectRetry<string>({
    policy: { ...CONNECT_RETRY, maxRetries: 9 },
    random: () => 0,
    sleep: async (ms) => void sleeps.push(ms),
  });
  const sleeps: number[] = [];
  const s = script(Array.from({ length: 9 }, () => refused()));
  t.equal(await capped.open('fp', { attempt: s.attempt }, true), 'open');
  t.same(sleeps, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000], 'doubling, capped at 60 s');
});

t.test('exhausted: the last error, with the attempts in its data', async (t) => {
  const h = harness();
  const s = script([http(429), http(429), http(429), http(429), http(429)]);
  const e = await rejection(h.retry.open('fp', { attempt: s.attempt }, true));
  t.equal(s.calls, CONNECT_RETRY.maxRetries + 1, 'the original attempt and maxRetries');
  t.same(h.sleeps, [1_000, 2_000, 4_000]);
  t.equal(e.code, 'ALBEDO_HTTP_ERROR', "the last failure's code");
  t.match(e.data, { status: 429, retry: { outcome: 'exhausted', attempts: 4, of: 4 } });
});

t.test("Retry-After: honoured as a minimum, above the cap, up to the episode's window", async (t) => {
  const h = harness({ random: 0 });
  const s = script([http(503, 2_000), http(503, 100), http(503, 150_000)]);
  t.equal(await h.retry.open('fp', { attempt: s.attempt }, true), 'open');
  t.same(h.sleeps, [2_000, 2_000, 150_000], "the server's wait when longer than the backoff (even past the 60 s cap), else the backoff");

  const far = harness();
  const s2 = script([http(429, CONNECT_RETRY.windowMs + 1)]);
  const e = await rejection(far.retry.open('fp', { attempt: s2.attempt }, true));
  t.equal(s2.calls, 1, 'a wait past the window is not made');
  t.same(far.sleeps, []);
  t.match(e.data, { status: 429, retryAfterMs: CONNECT_RETRY.windowMs + 1, retry: { outcome: 'exhausted', attempts: 1 } });

  // The window counts from the first attempt: waits that add up past it end the episode too.
  const late = harness();
  const s3 = script([http(503, 200_000), http(503, 200_000)]);
  const e3 = await rejection(late.retry.open('fp', { attempt: s3.attempt }, true));
  t.equal(s3.calls, 2);
  t.same(late.sleeps, [200_000]);
  t.match(e3.data, { retry: { outcome: 'exhausted', attempts: 2, retryAfterMs: 200_000 } });
});

t.test('authorization, protocol and application failures are not retried', async (t) => {
  for (const e of [new AlbedoError('ALBEDO_NEEDS_SIGN_IN', 'sign in'), http(401), new AlbedoError('ALBEDO_SPAWN_FAILED', 'ENOENT')]) {
    const h = harness();
    const s = script([e, e]);
    const got = await rejection(h.retry.open('fp', { attempt: s.attempt }, true));
    t.equal(got, e, `${e.code}: the error as it came`);
    t.equal(s.calls, 1);
    t.same(h.sleeps, []);
  }
  const h = harness();
  const s = script([http(503), http(401)]);
  const got = await rejection(h.retry.open('fp', { attempt: s.attempt }, true));
  t.equal(s.calls, 2, 'a final failure after a retry ends it');
  t.match(got.data, { status: 401, retry: { outcome: 'blocked', attempts: 2 } });
});

t.test('concurrent dials of one server share one episode', async (t) => {
  await t.test('exhausted: one attempt at a time; the followers fail with its error without touching the server', async (t) => {
    const h = harness({ hold: true });
    const leader = script([http(429), http(429), http(429), http(429)]);
    const followers = Array.from({ length: 9 }, () => script([http(429)]));
    const seen: RetryProgress[][] = followers.map(() => []);
    const all = [h.retry.open('fp', { attempt: leader.attempt }, true)];
    followers.forEach((f, i) => all.push(h.retry.open('fp', { attempt: f.attempt, progress: (p) => seen[i]!.push(p) }, i % 2 === 0)));
    const settled = Promise.allSettled(all);
    for (let i = 0; i < 3; i++) {
      await until(() => h.release.length === i + 1);
      h.release[i]!();
    }
    const out = await settled;
    t.equal(leader.calls, 4, "the leader's connection made every attempt");
    t.same(
      followers.map((f) => f.calls),
      followers.map(() => 0),
      'no follower dialled',
    );
    const errs = out.map((r) => (r as PromiseRejectedResult).reason as AlbedoError);
    t.ok(
      errs.every((e) => e === errs[0]),
      "all fail with the episode's error",
    );
    t.match(errs[0]!.data, { retry: { outcome: 'exhausted', attempts: 4 } });
    t.same(
      seen[0]!.map((p) => p.attempt),
      [2, 3, 4],
      'followers see the progress',
    );
  });

  await t.test('success: the one whose attempt succeeded keeps it, the others open their own once', async (t) => {
    const h = harness();
    const leader = script([http(503, 2_000)], 'leader');
    const followers = Array.from({ length: 9 }, (_, i) => script([], `f${i}`));
    const all = [h.retry.open('fp', { attempt: leader.attempt }, true), ...followers.map((f) => h.retry.open('fp', f, true))];
    t.same(await Promise.all(all), ['leader', ...followers.map((_, i) => `f${i}`)]);
    t.equal(leader.calls, 2);
    t.same(
      followers.map((f) => f.calls),
      followers.map(() => 1),
      'one attempt each, after the success',
    );
    t.same(h.sleeps, [2_000], 'one wait');
  });

  await t.test('a follower whose own attempt then fails is not retried', async (t) => {
    const h = harness();
    const leader = script([refused()]);
    const follower = script([refused(), refused()]);
    const [a, b] = await Promise.allSettled([h.retry.open('fp', leader, true), h.retry.open('fp', follower, true)]);
    t.equal(a.status, 'fulfilled');
    t.equal((b as PromiseRejectedResult).reason.code, 'ALBEDO_CONNECTION_CLOSED');
    t.equal(follower.calls, 1);
  });

  await t.test('another server has its own episode', async (t) => {
    const h = harness({ hold: true });
    const a = script([refused()]);
    const b = script([]);
    const pa = h.retry.open('fp-a', a, true);
    t.equal(await h.retry.open('fp-b', b, true), 'open');
    await until(() => h.release.length === 1);
    h.release[0]!();
    t.equal(await pa, 'open');
    t.same([a.calls, b.calls], [2, 1]);
  });
});

t.test('later dials make one attempt, and join an episode that runs', async (t) => {
  const h = harness({ hold: true });
  const alone = script([refused(), refused()]);
  t.equal((await rejection(h.retry.open('fp', alone, false))).code, 'ALBEDO_CONNECTION_CLOSED');
  t.equal(alone.calls, 1, 'no episode for a probe or a call');
  t.notOk(h.retry.running('fp'));

  const first = script([refused()]);
  const led = h.retry.open('fp', first, true);
  await until(() => h.release.length === 1);
  const probe = script([]);
  const seen: RetryProgress[] = [];
  const joined = h.retry.open('fp', { ...probe, progress: (p) => seen.push(p) }, false);
  t.same(
    seen.map((p) => p.attempt),
    [2],
    'told the wait under way when it joins',
  );
  h.release[0]!();
  t.same(await Promise.all([led, joined]), ['open', 'open']);
  t.same([first.calls, probe.calls], [2, 1]);
});

t.test('participants that leave', async (t) => {
  await t.test('the last one leaving during the wait ends it: nothing more is dialled', async (t) => {
    const h = harness({ hold: true });
    const s = script([http(503, 2_000), http(503)]);
    const ac = new AbortController();
    const p = h.retry.open('fp', { attempt: s.attempt, signal: ac.signal }, true);
    await until(() => h.sleeps.length === 1);
    ac.abort();
    const e = await rejection(p);
    t.equal(e.code, 'ALBEDO_CLOSED');
    t.equal(e.outcome, 'not_run');
    t.ok(h.signals[0]!.aborted, 'the wait was cut');
    await tick();
    await tick();
    t.equal(s.calls, 1, 'no attempt after the last one left');
    t.notOk(h.retry.running('fp'), 'the episode is gone');
  });

  await t.test('the leader leaving: a follower makes the next attempt with its own connection', async (t) => {
    const h = harness({ hold: true });
    const leader = script([refused(), refused()]);
    const follower = script([], 'follower');
    const ac = new AbortController();
    const pl = h.retry.open('fp', { attempt: leader.attempt, signal: ac.signal }, true);
    const pf = h.retry.open('fp', follower, true);
    await until(() => h.sleeps.length === 1);
    ac.abort();
    t.equal((await rejection(pl)).code, 'ALBEDO_CLOSED');
    t.notOk(h.signals[0]!.aborted, 'the wait goes on for the follower');
    h.release[0]!();
    t.equal(await pf, 'follower');
    t.same([leader.calls, follower.calls], [1, 1]);
  });

  await t.test('an attempt cut by its own session closing does not count', async (t) => {
    const h = harness();
    const ac = new AbortController();
    let calls = 0;
    const leader = {
      signal: ac.signal,
      attempt: async (): Promise<string> => {
        calls++;
        ac.abort();
        throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', 'closed while it opened', { outcome: 'not_run' });
      },
    };
    const follower = script([http(503), http(503), http(503), http(503)]);
    const [a, b] = await Promise.allSettled([h.retry.open('fp', leader, true), h.retry.open('fp', follower, true)]);
    t.equal(((a as PromiseRejectedResult).reason as AlbedoError).code, 'ALBEDO_CLOSED');
    t.equal(calls, 1);
    t.equal(follower.calls, 4, 'the follower still has the whole episode: the cut attempt was not counted');
    t.match((b as PromiseRejectedResult).reason.data, { retry: { attempts: 4 } });
    t.same(h.sleeps, [1_000, 2_000, 4_000], 'and no wait after the cut one');
  });

  await t.test('one that leaves during its own attempt gets its outcome: its owner closes what it opened', async (t) => {
    const h = harness();
    const ac = new AbortController();
    let finish!: () => void;
    const leader = {
      signal: ac.signal,
      attempt: () => new Promise<string>((r) => (finish = () => r('opened after the close'))),
    };
    const follower = script([], 'follower');
    const pl = h.retry.open('fp', leader, true);
    const pf = h.retry.open('fp', follower, true);
    let settled = false;
    void pl.then(
      () => (settled = true),
      () => (settled = true),
    );
    ac.abort();
    await tick();
    t.notOk(settled, 'not answered while its attempt runs');
    finish();
    t.equal(await pl, 'opened after the close');
    t.equal(await pf, 'follower', 'the server answered: the others open their own');
    t.equal(follower.calls, 1);
  });

  await t.test('a participant already gone never dials', async (t) => {
    const h = harness();
    const s = script([]);
    const e = await rejection(h.retry.open('fp', { attempt: s.attempt, signal: AbortSignal.abort() }, true));
    t.equal(e.code, 'ALBEDO_CLOSED');
    t.equal(s.calls, 0);
    await tick();
    t.notOk(h.retry.running('fp'));
  });
});

async function until(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !pred(); i++) await tick();
  if (!pred()) throw new Error('condition never held');
}
