import t from 'tap';
import { albedoFor, newTag, fixture, httpFixture, rejection, until } from '../helpers.ts';

const BAD = fixture('bad-http-server.ts');
type Tap = { teardown(fn: () => unknown): void };

async function setup(t: Tap, era: 'modern' | 'legacy', fault: string, extra: string[] = [], cfg: Record<string, unknown> = {}) {
  const tag = newTag();
  const srv = await httpFixture(t, tag, BAD, ['--era', era, '--fault', fault, ...extra]);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url, ...cfg });
  const calls = () => srv.log.filter((l) => l.rpc === 'tools/call');
  return { srv, a, c, calls };
}

for (const era of ['modern', 'legacy'] as const) {
  t.test(`${era}: an SSE response without event ids that breaks is lost, not retried`, async (t) => {
    const { c, calls } = await setup(t, era, 'drop-noid');
    const e = await rejection(c.callTool('echo', { text: 'x' }));
    t.equal(e.code, 'ALBEDO_STREAM_BROKEN');
    t.equal(e.outcome, 'unknown');
    t.equal(calls().length, 1, 'sent once');
  });
}

t.test('legacy: a broken SSE response is resumed with Last-Event-ID and delivers', async (t) => {
  const { c, srv, calls } = await setup(t, 'legacy', 'drop-once');
  t.equal((await c.callTool('echo', { text: 'resumed' })).content[0].text, 'resumed');
  t.equal(calls().length, 1, 'the request itself was sent once');
  t.match(
    srv.log.filter((l) => l.http === 'GET' && l.lastEventId),
    [{ lastEventId: /^e\d+$/ }],
  );
});

t.test('legacy: five resumptions in a row that bring nothing give up', async (t) => {
  const { c, srv, calls } = await setup(t, 'legacy', 'drop-forever');
  const e = await rejection(c.callTool('echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_STREAM_BROKEN');
  t.equal(e.outcome, 'unknown');
  t.match(e.message, /5 resumptions/);
  t.equal(srv.log.filter((l) => l.http === 'GET' && l.lastEventId).length, 5);
  t.equal(calls().length, 1);
});

t.test('modern: a broken stream cannot be resumed', async (t) => {
  const { c, srv } = await setup(t, 'modern', 'drop-once');
  const e = await rejection(c.callTool('echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_STREAM_BROKEN');
  t.match(e.message, /cannot be resumed/);
  t.equal(srv.log.filter((l) => l.http === 'GET').length, 0);
});

t.test('legacy: a 404 for the session ends it; the next call dials again', async (t) => {
  const { c, srv } = await setup(t, 'legacy', 'session-404', ['--after', '3']);
  // Requests with the session: initialized, GET stream, tools/list → the next is the 4th.
  await until(() => srv.log.some((l) => l.http === 'GET'), 5_000, 'the GET stream');
  const e = await rejection(c.callTool('echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_SESSION_EXPIRED');
  t.equal(e.outcome, 'not_run');
  t.equal((await c.callTool('echo', { text: 'again' })).content[0].text, 'again');
  t.equal(srv.log.filter((l) => l.rpc === 'initialize').length, 2, 'a new session was opened');
});

t.test('legacy: a GET answered 405 is not tried again', async (t) => {
  const { c, srv } = await setup(t, 'legacy', 'get-405');
  await until(() => srv.log.some((l) => l.http === 'GET'), 5_000, 'the GET attempt');
  await c.callTool('echo', { text: 'x' });
  await new Promise((r) => setTimeout(r, 1_500));
  t.equal(srv.log.filter((l) => l.http === 'GET').length, 1);
  t.ok(
    srv.log.filter((l) => l.http === 'GET').every((l) => typeof l.session === 'string'),
    'the GET carries the session',
  );
});

t.test('legacy: a GET stream that drops is reopened after a growing wait', async (t) => {
  const { srv } = await setup(t, 'legacy', 'get-drop');
  await until(() => srv.log.filter((l) => l.http === 'GET').length >= 2, 5_000, 'a second GET');
  const gets = srv.log.filter((l) => l.http === 'GET').length;
  await new Promise((r) => setTimeout(r, 500));
  t.equal(srv.log.filter((l) => l.http === 'GET').length, gets, 'not reopened in a tight loop');
});

t.test('modern: a timeout closes the stream (that is the cancellation)', async (t) => {
  const { c, srv } = await setup(t, 'modern', 'slow');
  const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 500 }));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  t.equal(e.outcome, 'unknown');
  await until(() => srv.log.some((l) => l.event === 'client closed the stream'), 5_000, 'the stream to close');
  t.equal(srv.log.filter((l) => l.rpc === 'notifications/cancelled').length, 0, 'no notifications/cancelled in this era');
});

t.test('legacy: a timeout sends notifications/cancelled', async (t) => {
  const { c, srv } = await setup(t, 'legacy', 'slow');
  const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 500 }));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  await until(() => srv.log.some((l) => l.rpc === 'notifications/cancelled'), 5_000, 'notifications/cancelled');
  t.pass('cancelled was posted');
});

for (const era of ['modern', 'legacy'] as const) {
  t.test(`${era}: a 20 MiB SSE event is refused`, async (t) => {
    const { c } = await setup(t, era, 'huge');
    const e = await rejection(c.callTool('echo', { text: 'x' }));
    t.equal(e.code, 'ALBEDO_FRAME_TOO_LARGE');
    t.equal(
      (await c.callTool('echo', { text: 'still fine' }).catch((err) => err)).code ?? 'ok',
      'ALBEDO_FRAME_TOO_LARGE',
      'every call to the tool meets the same cap',
    );
  });
}

t.test('HTTP 500 is an error with an unknown outcome', async (t) => {
  const { c, calls } = await setup(t, 'modern', 'status-500');
  const e = await rejection(c.callTool('echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_HTTP_ERROR');
  t.equal(e.outcome, 'unknown');
  t.match(e.message, /HTTP 500: internal explosion/);
  t.equal(calls().length, 1);
});

t.test('modern: a listen stream that keeps closing is held again with backoff', async (t) => {
  const { srv, c } = await setup(t, 'modern', 'listen-drop');
  const warnings: string[] = [];
  c.on('warning', (w) => warnings.push(w));
  await until(() => srv.log.filter((l) => l.rpc === 'subscriptions/listen').length >= 3, 6_000, 'three listens');
  const n = srv.log.filter((l) => l.rpc === 'subscriptions/listen').length;
  t.ok(n <= 4, `listens are spaced out (${n})`);
  t.ok(srv.log.filter((l) => l.rpc === 'tools/list').length >= 2, 'lists are fetched again after a listen is re-held');
});
