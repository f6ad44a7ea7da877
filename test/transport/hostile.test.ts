// The hostile-input corpus (issue 10): for each kind of input no real server
// sends, that connection fails or the input is ignored with a specific code,
// a healthy connection on the same worker keeps working, the worker never
// restarts (no service/lost, no service/restarted), and the worker's heap
// returns to its baseline once the hostile connection is closed.
import t, { type Test } from 'tap';
import { request } from 'undici';
import { albedoFor, newTag, server, fixture, rejection, httpFixture, until } from '../helpers.ts';
import type { Albedo } from '../../api/albedo.ts';
import type { Connection } from '../../api/connection.ts';

const hostile = fixture('hostile-server.ts');
const hostileHttp = fixture('hostile-http-server.ts');
/** A worker's heap may keep some of what a hostile input cost (code, compiled regexps, pools): this much. */
const HEAP_SLACK = 24 * 1024 * 1024;

interface Harness {
  a: Albedo;
  /** A healthy connection on the same (only) transport worker. */
  ok: Connection;
  /** Opens a hostile stdio connection, collecting its warnings. */
  open(mode: string, name?: string): Promise<{ c: Connection; warnings: Array<[string, string | undefined]> }>;
  /** Closes `c`, then: the healthy connection still answers, the worker never restarted, its heap is back near the baseline. */
  settle(t: Test, c?: Connection): Promise<void>;
}

async function harness(t: Test): Promise<Harness> {
  const tag = newTag();
  // Fault injection on for its worker/stats: the worker's heap after a collection.
  const a = await albedoFor(t, tag, { transportWorkers: 1, faults: true });
  const lifecycle: string[] = [];
  a.kernel.on('kernel', 'service/lost', (e) => lifecycle.push(`lost: ${e.reason}`));
  a.kernel.on('kernel', 'service/restarted', (e) => lifecycle.push(`restarted: ${e.reason}`));
  const ok = await a.connect(server(tag, fixture('sdk1-server.ts')), { name: 'healthy' });
  const heap = async (): Promise<number> => (await a.faults!.stats('transport', { gc: true }, { key: ok.id })).heapUsed;
  await heap();
  const base = await heap();
  return {
    a,
    ok,
    async open(mode, name = `hostile-${mode}`) {
      const warnings: Array<[string, string | undefined]> = [];
      const c = await a.connect(server(tag, hostile, [mode]), { name });
      c.on('warning', (m, code) => warnings.push([m, code]));
      return { c, warnings };
    },
    async settle(t: Test, c?: Connection) {
      await c?.close();
      const r = await ok.callTool('echo', { text: 'still here' });
      t.equal((r.content[0] as unknown as { text: string }).text, 'still here', 'the healthy connection on the same worker still answers');
      t.same(lifecycle, [], 'the worker was never lost or restarted');
      const after = await heap();
      t.ok(
        after < base + HEAP_SLACK,
        `the worker's heap returned to its baseline (${(base / 1e6).toFixed(1)} MB → ${(after / 1e6).toFixed(1)} MB)`,
      );
    },
  };
}

t.test('notifications and requests named after Object.prototype keys are ignored or refused', async (t) => {
  const h = await harness(t);
  const { c, warnings } = await h.open('proto-methods');
  const r = await c.callTool('echo', { text: 'plain' });
  t.equal((r.content[0] as unknown as { text: string }).text, 'plain', 'the call after them is answered');
  await until(() => warnings.length > 0, 10_000, 'a warning about the non-MCP notifications');
  t.ok(warnings.length <= 4, 'warnings are rate-limited, not one per message');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  await h.settle(t, c);
});

t.test('a catalogue nested past the depth bound is refused, naming the server', async (t) => {
  const h = await harness(t);
  const e = await rejection(h.open('deep', 'deep-one'));
  t.equal(e.code, 'ALBEDO_CATALOGUE_TOO_LARGE');
  t.same(e.data, { server: 'deep-one', limit: 'depth' });
  await h.settle(t);
});

t.test('a catalogue that turns too deep on rediscovery is refused; the previous one stays', async (t) => {
  const h = await harness(t);
  const { c, warnings } = await h.open('deep-later', 'later');
  t.same(
    c.catalogue.tools.map((x) => x.name),
    ['echo'],
  );
  await c.callTool('echo', { text: 'x' }); // the server sends list_changed, then a deep list
  await until(() => warnings.some(([, code]) => code === 'ALBEDO_CATALOGUE_TOO_LARGE'), 20_000, 'the refusal');
  t.same(
    c.catalogue.tools.map((x) => x.name),
    ['echo'],
    'the catalogue was not replaced',
  );
  t.equal((await c.callTool('echo', { text: 'y' })).content.length, 1, 'the connection goes on');
  await h.settle(t, c);
});

t.test('100,000 tools on one page are refused before they are parsed', async (t) => {
  const h = await harness(t);
  const e = await rejection(h.open('many-tools', 'crowd'));
  t.equal(e.code, 'ALBEDO_CATALOGUE_TOO_LARGE');
  t.same(e.data, { server: 'crowd', limit: 'items' });
  await h.settle(t);
});

t.test('a 16 MiB description passes the frame cap and fails that connection alone', async (t) => {
  const h = await harness(t);
  const e = await rejection(h.open('huge-description'));
  t.equal(e.code, 'ALBEDO_FRAME_TOO_LARGE');
  await h.settle(t);
});

t.test('invalid UTF-8 in a result becomes U+FFFD; the connection goes on', async (t) => {
  const h = await harness(t);
  const { c } = await h.open('invalid-utf8');
  const text = ((await c.callTool('echo', { text: 'x' })).content[0] as unknown as { text: string }).text;
  t.match(text, /^before .*\uFFFD.* after$/);
  await h.settle(t, c);
});

t.test('duplicate, unknown and wrongly typed ids, and a result for a notification, are ignored', async (t) => {
  const h = await harness(t);
  const { c, warnings } = await h.open('bad-ids');
  t.equal(((await c.callTool('echo', { text: 'one' })).content[0] as unknown as { text: string }).text, 'one');
  t.equal(
    ((await c.callTool('echo', { text: 'two' })).content[0] as unknown as { text: string }).text,
    'two',
    'the real answer still matched',
  );
  t.equal(((await c.callTool('echo', { text: 'three' })).content[0] as unknown as { text: string }).text, 'three');
  await until(() => warnings.length > 0, 10_000, 'warnings');
  await h.settle(t, c);
});

t.test('a flood of junk lines and foreign notifications gets a few warnings, not one each', async (t) => {
  const h = await harness(t);
  const { c, warnings } = await h.open('flood');
  t.equal(((await c.callTool('echo', { text: 'after the flood' })).content[0] as unknown as { text: string }).text, 'after the flood');
  await c.ping();
  t.ok(warnings.length >= 1 && warnings.length <= 4, `${warnings.length} warnings for 40,000 bad messages`);
  await h.settle(t, c);
});

t.test('a result nested past the depth bound is refused; the connection goes on', async (t) => {
  const h = await harness(t);
  const { c } = await h.open('deep-result');
  const e = await rejection(c.callTool('echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_INVALID_RESPONSE');
  t.equal(e.outcome, 'unknown');
  t.ok(await c.ping(), 'the same connection still answers');
  await h.settle(t, c);
});

async function stats(url: string): Promise<{ open: number; max: number; total: number }> {
  const res = await request(new URL('/stats', url));
  return (await res.body.json()) as { open: number; max: number; total: number };
}

t.test('a server that keeps every SSE stream open cannot exhaust the pool: 1,000 calls, few sockets', async (t) => {
  const h = await harness(t);
  const srv = await httpFixture(t, newTag(), hostileHttp, ['--fault', 'keep-open']);
  const c = await h.a.connect({ url: srv.url }, { name: 'keeps-open' });
  for (let i = 0; i < 1_000; i++) {
    const r = await c.callTool('echo', { text: `n${i}` });
    if ((r.content[0] as unknown as { text: string }).text !== `n${i}`) t.fail(`call ${i} got the wrong answer`);
  }
  const s = await stats(srv.url);
  t.ok(s.max <= 16, `at most ${s.max} sockets were open at once (limit 16)`);
  await h.settle(t, c);
});

t.test('an SSE stream that never brings the response times out; its socket is released', async (t) => {
  const h = await harness(t);
  const srv = await httpFixture(t, newTag(), hostileHttp, ['--fault', 'never-ending']);
  const c = await h.a.connect({ url: srv.url }, { name: 'never-ending' });
  const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 1_000 }));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  // The /stats request holds a socket of its own; the never-ending stream's must be gone.
  let open = Infinity;
  for (let i = 0; i < 150 && open > 1; i++) {
    open = (await stats(srv.url)).open - 1;
    if (open > 1) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(open <= 1, 'the never-ending stream was closed');
  await h.settle(t, c);
});

t.test('a slowloris answer times out and is abandoned', async (t) => {
  const h = await harness(t);
  const srv = await httpFixture(t, newTag(), hostileHttp, ['--fault', 'slowloris']);
  const c = await h.a.connect({ url: srv.url }, { name: 'slow' });
  const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 1_000 }));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  t.equal((await rejection(c.callTool('echo', { text: 'y' }, { timeoutMs: 1_000 }))).code, 'ALBEDO_TIMEOUT', 'and again: nothing piles up');
  await h.settle(t, c);
});

t.test('prototype-key methods on an SSE stream are ignored; the call is answered', async (t) => {
  const h = await harness(t);
  const srv = await httpFixture(t, newTag(), hostileHttp, ['--fault', 'proto-methods']);
  const c = await h.a.connect({ url: srv.url }, { name: 'proto-http' });
  const warnings: string[] = [];
  c.on('warning', (m) => warnings.push(m));
  t.equal(((await c.callTool('echo', { text: 'fine' })).content[0] as unknown as { text: string }).text, 'fine');
  await until(() => warnings.length > 0, 10_000, 'a warning');
  await h.settle(t, c);
});

t.test("a server error whose data nests 20,000 levels is the server's error, pruned; the worker survives", async (t) => {
  const h = await harness(t);
  for (const levels of [20_000, 5_000]) {
    const { c } = await h.open(`err-deep:${levels}`);
    const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 10_000 }));
    t.equal(e.code, 'ALBEDO_SERVER_ERROR', `${levels} levels: the server's error, at once (not a deadline)`);
    t.equal((e.data as { code: number }).code, -32000);
    await c.close();
  }
  await h.settle(t);
});

t.test('capabilities nested 20,000 levels fail the open and leave no connection behind', async (t) => {
  const h = await harness(t);
  const e = await rejection(h.open('caps-deep'));
  t.equal(e.code, 'ALBEDO_INVALID_RESPONSE');
  const stats = await h.a.faults!.stats('transport', {}, { key: h.ok.id });
  t.equal(stats.connections, 1, 'only the healthy connection is held by the worker');
  await h.settle(t);
});

t.test('server requests: deep params never reach the handler, a storm is served 64 at a time', async (t) => {
  const tag = newTag();
  let calls = 0;
  const a = await albedoFor(t, tag, {
    transportWorkers: 1,
    faults: true,
    handlers: {
      elicitation: () => {
        calls++;
        return new Promise(() => {});
      },
    },
  });
  const lost: string[] = [];
  a.kernel.on('kernel', 'service/lost', (e) => lost.push(e.reason));
  const deep = await a.connect(server(tag, hostile, ['elicit-deep']));
  t.equal(((await deep.callTool('echo', { text: 'deep' })).content[0] as unknown as { text: string }).text, 'deep');
  const storm = await a.connect(server(tag, hostile, ['elicit-storm']));
  t.equal(((await storm.callTool('echo', { text: 'storm' })).content[0] as unknown as { text: string }).text, 'storm');
  await storm.ping();
  t.equal(calls <= 64, true, `the handler ran ${calls} times for 5,100 requests (at most 64 at once)`);
  const heap = (await a.faults!.stats('transport', { gc: true }, { key: storm.id })).heapUsed;
  t.ok(heap < 200 * 1024 * 1024, `the worker's heap stayed bounded (${(heap / 1e6).toFixed(1)} MB)`);
  t.same(lost, []);
});

t.test('a response whose result is a string fails its request at once', async (t) => {
  const h = await harness(t);
  const { c } = await h.open('result-string');
  const e = await rejection(c.callTool('echo', { text: 'x' }, { timeoutMs: 60_000 }));
  t.equal(e.code, 'ALBEDO_INVALID_RESPONSE', 'not a timeout');
  await h.settle(t, c);
});

t.test('a server that announces a change with every list is not listed in a loop', async (t) => {
  const h = await harness(t);
  const { c } = await h.open('list-loop');
  await new Promise((r) => setTimeout(r, 3_000));
  const lists = Number(((await c.callTool('echo', { text: 'x' })).content[0] as unknown as { text: string }).text);
  t.ok(lists >= 2 && lists <= 8, `${lists} tools/list in about 3 s (one a second at most, plus the first)`);
  await h.settle(t, c);
});

t.test('SSE floods: 50,000 non-JSON events warn a few times; a 100,000-message batch is cut', async (t) => {
  const h = await harness(t);
  for (const fault of ['nonjson-flood', 'batch-flood']) {
    const srv = await httpFixture(t, newTag(), hostileHttp, ['--fault', fault]);
    const c = await h.a.connect({ url: srv.url }, { name: fault });
    const warnings: string[] = [];
    c.on('warning', (m) => warnings.push(m));
    t.equal(((await c.callTool('echo', { text: fault })).content[0] as unknown as { text: string }).text, fault);
    await c.ping();
    t.ok(warnings.length >= 1 && warnings.length <= 4, `${fault}: ${warnings.length} warnings`);
    await c.close();
    await srv.stop();
  }
  await h.settle(t);
});
