// Connect retry end to end (docs/architecture.md, "Connect retry"): a session's first dial of a real MCP server
// (the official SDK over Streamable HTTP) behind a loopback gate that answers 503 with Retry-After, 429 storms or
// 401 before letting requests through. The gate counts what the client sent; the waits are those passed to an
// injected sleep (the composer runs on this thread), not wall time. Ten sessions opened at once share one
// episode, through the composer and through the embedding API (its composer in a worker, the real policy).
import t from 'tap';
import { AlbedoError } from '../../protocol/errors.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { CONNECT_RETRY, ConnectRetry, useConnectRetry } from '../../services/composer/connect-retry.ts';
import { kernelTransport } from '../../services/composer/kernel-transport.ts';
import { Upstream, type UpstreamOwner } from '../../services/composer/upstream.ts';
import { albedoFor, newTag, rejection, tempHome, until } from '../helpers.ts';
import { FakeClock, FakeSettings, Recorder, composerFor, entry, statusOf, text, toolsOf } from '../fixtures/composer-ports.ts';
import { retryGate, type Gate } from '../fixtures/retry-gate.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

/** The retry the composer on this thread uses: no jitter (random 0), each wait recorded and made 10 ms long. */
function injectSleep(t: Tap) {
  const sleeps: number[] = [];
  t.teardown(
    useConnectRetry(
      new ConnectRetry({
        random: () => 0,
        sleep: async (ms) => {
          sleeps.push(ms);
          await new Promise((r) => setTimeout(r, 10));
        },
      }),
    ),
  );
  return sleeps;
}
type Tap = { teardown(fn: () => unknown): void };

async function setup(t: Tap, config: Record<string, unknown> = {}) {
  const tag = newTag();
  const gate = await retryGate(t);
  const settings = new FakeSettings([entry('gated', { url: gate.url, ...config })]);
  const a = await albedoFor(t, tag, { home: tempHome(t), transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  return { gate, composer, a, settings };
}

const every = (status: number, headers?: Record<string, string>) => (r: { http: string }) =>
  r.http === 'POST' ? { status, headers } : undefined;
const posts = (g: Gate) => g.posts().map((r) => [r.rpc, r.answered ?? 'passed']);

t.test('503 with Retry-After: 2, twice, then through: the wait honours the hint, then the server is ready', async (t) => {
  const sleeps = injectSleep(t);
  const { gate, composer } = await setup(t);
  gate.rule = (r) => (r.http === 'POST' && gate.answered(503) < 2 ? { status: 503, headers: { 'retry-after': '2' } } : undefined);
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);
  t.equal(statusOf(s, 'gated').state, 'ready');
  t.same(sleeps, [2_000, 2_000], "two waits, of the server's 2 s each (the backoff was 1 s, then 2 s)");
  t.same(
    posts(gate).slice(0, 4),
    [
      ['server/discover', 503],
      ['server/discover', 503],
      ['server/discover', 'passed'],
      ['initialize', 'passed'],
    ],
    'a 503 to server/discover says nothing of the era: the attempt fails and is retried, no initialize in between',
  );
  t.equal(gate.answered(503), 2, 'two refusals: the first attempt and the first retry');
  t.same(rec.states('gated'), ['starting', 'ready'], 'no failure shown in between');
  t.ok(toolsOf(s, 'gated').length > 0);
  t.equal(text(await s.call('gated/echo', { text: 'hi' })), 'hi');
  await s.close();
});

t.test('503 whose body is a JSON-RPC error (an overloaded SDK server says so in JSON-RPC too): retried as any 503', async (t) => {
  const sleeps = injectSleep(t);
  const { gate, composer } = await setup(t);
  const overloaded = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Server overloaded' } });
  gate.rule = (r) =>
    r.http === 'POST' && gate.answered(503) < 2
      ? { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '2' }, body: overloaded }
      : undefined;
  const s = await composer.open();
  t.equal(statusOf(s, 'gated').state, 'ready');
  t.same(sleeps, [2_000, 2_000], "a wait of the server's Retry-After after each refused attempt");
  t.equal(gate.answered(503), 2, 'two refusals, each ending its attempt');
  t.same(gate.posts('initialize').length, 1, 'never taken for a legacy server on a 503');
  t.equal(text(await s.call('gated/echo', { text: 'hi' })), 'hi');
  await s.close();

  // A status that does not pass keeps the JSON-RPC error as the answer: the server's own, not retried.
  const again = await setup(t);
  const refused = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'no' } });
  again.gate.rule = (r) =>
    r.http === 'POST' ? { status: 400, headers: { 'content-type': 'application/json' }, body: refused } : undefined;
  const s2 = await again.composer.open();
  t.equal(statusOf(s2, 'gated').state, 'left_out');
  t.not(statusOf(s2, 'gated').reason?.code, 'ALBEDO_HTTP_ERROR', "the server's JSON-RPC error, not an HTTP one");
  t.equal(again.gate.posts('initialize').length, 1, 'one attempt');
  await s2.close();
});

t.test('a 429 storm: exhausted after maxRetries, the server left out with the last error', async (t) => {
  const sleeps = injectSleep(t);
  const { gate, composer } = await setup(t);
  gate.rule = every(429);
  const s = await composer.open();
  const st = statusOf(s, 'gated');
  t.equal(st.state, 'left_out');
  t.equal(st.reason?.code, 'ALBEDO_HTTP_ERROR');
  const attempts = CONNECT_RETRY.maxRetries + 1;
  t.equal(gate.posts('server/discover').length, attempts, `${attempts} attempts`);
  t.equal(gate.posts().length, attempts, 'each: server/discover alone (a 429 says nothing of the era: no initialize)');
  t.same(sleeps, [1_000, 2_000, 4_000]);
  await s.close();

  // The error itself (a session shows its code and message): the last 429, and what the retry did.
  const a = await albedoFor(t, newTag(), { transportWorkers: 1 });
  const before = gate.posts().length;
  const failed: AlbedoError[] = [];
  const owner: UpstreamOwner = { opened() {}, failed: (e) => void failed.push(e), dropped() {}, catalogueChanged() {}, warned() {} };
  const up = new Upstream('retry-upstream', entry('gated', { url: gate.url }), kernelTransport(a.kernel, { eraCachePath: null }), owner);
  const e = await rejection(up.dial());
  t.equal(e.code, 'ALBEDO_HTTP_ERROR');
  t.match(e.data, { status: 429, retry: { outcome: 'exhausted', attempts, of: attempts } });
  t.equal(failed.length, 1, 'the owner is told once, at the end');
  t.equal(gate.posts().length - before, attempts);
  const again = await rejection(up.dial());
  t.notOk((again.data as { retry?: unknown }).retry, 'a later dial (a probe, a call) makes one attempt');
  t.equal(gate.posts().length - before, attempts + 1);
  await up.close();
});

t.test('401 is not retried', async (t) => {
  const sleeps = injectSleep(t);
  await t.test('OAuth (the default): needs a sign-in after one request', async (t) => {
    const { gate, composer } = await setup(t);
    gate.rule = every(401);
    const s = await composer.open();
    t.equal(statusOf(s, 'gated').state, 'needs_sign_in');
    t.equal(statusOf(s, 'gated').reason?.code, 'ALBEDO_NEEDS_SIGN_IN');
    t.same(posts(gate), [['server/discover', 401]], 'one request');
    await s.close();
  });
  await t.test('a fixed Authorization: the HTTP error of one attempt', async (t) => {
    const { gate, composer } = await setup(t, { headers: { Authorization: 'Bearer nope' } });
    gate.rule = every(401, { 'retry-after': '1' });
    const s = await composer.open();
    t.equal(statusOf(s, 'gated').state, 'left_out');
    t.equal(statusOf(s, 'gated').reason?.code, 'ALBEDO_HTTP_ERROR');
    t.same(posts(gate), [
      ['server/discover', 401],
      ['initialize', 401],
    ]);
    await s.close();
  });
  t.same(sleeps, [], 'no wait');
});

t.test('ten sessions opened at once share one episode', async (t) => {
  await t.test('exhausted: the fixture sees one episode, not ten', async (t) => {
    const sleeps = injectSleep(t);
    const { gate, composer } = await setup(t);
    gate.rule = every(503);
    const sessions = await Promise.all(Array.from({ length: 10 }, () => composer.open()));
    for (const s of sessions) t.equal(statusOf(s, 'gated').state, 'left_out');
    t.equal(gate.posts().length, CONNECT_RETRY.maxRetries + 1, "one episode's requests");
    t.same(sleeps, [1_000, 2_000, 4_000], "one episode's waits");
    await Promise.all(sessions.map((s) => s.close()));
  });
  await t.test('success: one episode of refusals, then each session opens its own connection once', async (t) => {
    const sleeps = injectSleep(t);
    const { gate, composer } = await setup(t);
    gate.rule = (r) => (r.http === 'POST' && gate.answered(503) < 2 ? { status: 503, headers: { 'retry-after': '2' } } : undefined);
    const sessions = await Promise.all(Array.from({ length: 10 }, () => composer.open()));
    for (const s of sessions) t.equal(statusOf(s, 'gated').state, 'ready');
    t.equal(gate.answered(503), 2);
    t.same(sleeps, [2_000, 2_000], 'two refused attempts, one episode');
    t.equal(gate.posts('initialize').filter((r) => r.answered === undefined).length, 10, 'ten connections, each initialised once');
    await Promise.all(sessions.map((s) => s.close()));
  });
  await t.test('through the embedding API (the composer in its worker, the real policy)', async (t) => {
    const tag = newTag();
    const gate = await retryGate(t);
    gate.rule = every(429);
    const h = sessionHome(t, tag);
    h.write({ gated: { url: gate.url } });
    const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
    const sessions = await Promise.all(Array.from({ length: 10 }, () => albedo.sessions.open()));
    for (const s of sessions) t.match(s.status(), [{ name: 'gated', state: 'left_out', reason: { code: 'ALBEDO_HTTP_ERROR' } }]);
    t.equal(gate.posts().length, CONNECT_RETRY.maxRetries + 1, "one episode's requests for ten sessions");
    await Promise.all(sessions.map((s) => s.close()));
  });
});

t.test('a session closed during the wait: nothing more is dialled', async (t) => {
  const waits: AbortSignal[] = [];
  t.teardown(
    useConnectRetry(
      new ConnectRetry({
        sleep: (_ms, signal) =>
          new Promise<void>((r) => {
            waits.push(signal);
            signal.addEventListener('abort', () => r(), { once: true });
          }),
      }),
    ),
  );
  const { gate, composer } = await setup(t);
  // A first session saves the catalogue; the next one advertises it and dials in the background.
  await (await composer.open()).close();
  const before = gate.posts().length;
  gate.rule = every(503, { 'retry-after': '2' });
  const s = await composer.open();
  t.equal(statusOf(s, 'gated').state, 'advertised');
  for (let i = 0; i < 500 && waits.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(waits.length, 1, 'the background dial failed and waits');
  const refused = gate.posts().length - before;
  const closing = s.close();
  await until(() => waits[0]!.aborted, 10_000, 'the wait to be cut by the close');
  await closing;
  await new Promise((r) => setTimeout(r, 100));
  t.equal(gate.posts().length - before, refused, 'no request after the close');
});

t.test('a call in flight that fails is never retried', async (t) => {
  const sleeps = injectSleep(t);
  const { gate, composer } = await setup(t);
  const s = await composer.open();
  t.equal(statusOf(s, 'gated').state, 'ready');
  gate.rule = (r) => (r.rpc === 'tools/call' ? { status: 503, headers: { 'retry-after': '1' } } : undefined);
  const e = await rejection(s.call('gated/echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_HTTP_ERROR');
  t.equal(e.outcome, 'unknown', 'a 5xx: it may have run');
  t.match(e.data, { status: 503, retryAfterMs: 1_000 });
  t.equal(gate.posts('tools/call').length, 1, 'one request at the fixture');
  t.same(sleeps, []);
  await s.close();
});

t.test("an advertised server's background dial shows its retry in the status, then ready", async (t) => {
  let release!: () => void;
  const waits: number[] = [];
  t.teardown(
    useConnectRetry(
      new ConnectRetry({
        random: () => 0,
        sleep: (ms) => {
          waits.push(ms);
          return new Promise<void>((r) => (release = r));
        },
      }),
    ),
  );
  const { gate, composer } = await setup(t);
  // A first session saves the catalogue; the second advertises it at once and dials in the background.
  const first = await composer.open({});
  t.equal(statusOf(first, 'gated').state, 'ready');
  await first.close();
  // Two refusals make one attempt: the cached verdict's initialize, then the fresh probe's discover (a 503 there
  // says nothing of the era: the attempt fails).
  gate.rule = (r) => (r.http === 'POST' && gate.answered(503) < 2 ? { status: 503, headers: { 'retry-after': '2' } } : undefined);
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);
  await until(() => waits.length === 1, 30_000, 'the retry to wait');
  t.match(statusOf(s, 'gated'), {
    state: 'advertised',
    retry: { attempt: 2, of: CONNECT_RETRY.maxRetries + 1, code: 'ALBEDO_HTTP_ERROR' },
  });
  t.ok(statusOf(s, 'gated').retry!.nextAt > 0);
  t.ok(
    rec.events.some((e) => e.type === 'state' && e.server === 'gated' && e.reason?.code === 'ALBEDO_HTTP_ERROR'),
    'the retry is said once in a state event',
  );
  release();
  await until(() => statusOf(s, 'gated').state === 'ready', 30_000, 'ready after the retry');
  t.equal(statusOf(s, 'gated').retry, undefined, 'the retry is gone from the status');
  await s.close();
});
