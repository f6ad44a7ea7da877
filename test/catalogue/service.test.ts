// The catalogue service in its worker (issue 15, item 2), through a real
// Kernel and real LMDB in a temp $ALBEDO_HOME: saved rows by fingerprint,
// the normaliser in-thread and on its piscina pool (same answers either
// way), a 5,000-schema batch that leaves the service answering, and the
// pool's threads dying with the worker however it ends.
import t, { type Test } from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kernel, type ServiceSpec } from '../../kernel/kernel.ts';
import { Faults } from '../../kernel/faults.ts';
import type { SavedCatalogue } from '../../protocol/catalogue.ts';
import type { CatalogueStats } from '../../protocol/services/catalogue.ts';
import { POOL_NODES, POOL_THRESHOLD, heavy } from '../../services/catalogue/normalise-pool.ts';
import { SchemaCache } from '../../services/catalogue/schema-cache.ts';
import { normaliseAll, PROFILES } from '../../services/catalogue/schema/normalise.ts';
import { fixture, rejection, tempHome, until } from '../helpers.ts';

const MODULE = fileURLToPath(new URL('../../services/catalogue/service.ts', import.meta.url));

type S = Record<string, unknown>;
const load = (name: string): S => JSON.parse(readFileSync(fixture(`schemas/${name}`), 'utf8'));
/** The schema corpus of test/catalogue/schema.test.ts: server-everything's tools, the conformance tools, the hand-made hard cases. */
const CORPUS: unknown[] = [
  ...(load('everything.json').tools as Array<{ inputSchema: unknown }>).map((x) => x.inputSchema),
  ...(load('conformance.json').tools as Array<{ inputSchema: unknown }>).map((x) => x.inputSchema),
  ...Object.values(load('hard.json').cases as S),
];

/** `n` distinct schemas: the corpus over and over, each object copy saying which one it is. */
function varied(n: number): unknown[] {
  return Array.from({ length: n }, (_, i) => {
    const s = structuredClone(CORPUS[i % CORPUS.length]);
    return typeof s === 'object' && s !== null && !Array.isArray(s) ? { ...s, description: `copy ${i}` } : s;
  });
}

const row = (over: Partial<SavedCatalogue> = {}): SavedCatalogue => ({
  server: 'docs',
  fingerprint: 'fp1',
  era: 'modern',
  protocolVersion: '2026-07-28',
  serverInfo: { name: 'docs', version: '1.0.0' },
  capabilities: { tools: { listChanged: true } },
  instructions: 'Use search first.',
  catalogue: { tools: [{ name: 'search', inputSchema: { type: 'object' } }], resources: [], resourceTemplates: [], prompts: [] },
  savedAt: 1,
  ...over,
});

interface Started {
  k: Kernel;
  faults: Faults;
  storePath: string;
}

function start(t: Test, options: S = {}, over: Partial<ServiceSpec> = {}, storePath = path.join(tempHome(t), 'store')): Started {
  const k = new Kernel({ faults: true });
  k.start({
    name: 'catalogue',
    module: MODULE,
    options: { storePath, ...options },
    restart: { intensity: 5, periodMs: 60_000, backoffMs: 20, maxBackoffMs: 200 },
    ...over,
  });
  t.teardown(() => k.stop(5_000));
  return { k, faults: new Faults(k), storePath };
}

const stats = (k: Kernel): Promise<CatalogueStats> => k.call('catalogue', 'catalogue/stats', {});
/** Linux only: whether thread `tid` of this process still runs. */
const alive = (tid: number): boolean => existsSync(`/proc/self/task/${tid}`);
const LINUX = process.platform === 'linux';

/** Starts a large batch (large enough to outlast a few stats round trips) and waits until its chunks run on pool threads. */
async function pooledRunning(k: Kernel, schemas: unknown[], opts: { signal?: AbortSignal } = {}) {
  const batch = k.call('catalogue', 'catalogue/normalise', { schemas, profile: 'portable' }, { timeoutMs: 120_000, ...opts });
  batch.catch(() => {});
  let s = await stats(k);
  const end = Date.now() + 30_000;
  while (!(s.running > 0 && s.pool && s.pool.threads > 0 && (!LINUX || s.pool.tids.length > 0)) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 10));
    s = await stats(k);
  }
  return { batch, running: s };
}

t.test('saved rows: a round trip, in order, by fingerprint only; an equal discovery writes nothing', async (t) => {
  const { k } = start(t);
  t.same(
    await k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }),
    [null],
    'nothing saved yet',
  );
  t.same(await k.call('catalogue', 'catalogue/put', { row: row() }), { changed: true });
  t.same(await k.call('catalogue', 'catalogue/put', { row: row({ server: 'web', fingerprint: 'fw' }) }), { changed: true });
  const got = await k.call('catalogue', 'catalogue/current', {
    servers: [
      { server: 'web', fingerprint: 'fw' },
      { server: 'docs', fingerprint: 'other' },
      { server: 'docs', fingerprint: 'fp1' },
      { server: 'none', fingerprint: 'x' },
    ],
  });
  t.equal(got.length, 4);
  t.equal(got[0]?.server, 'web');
  t.equal(got[1], null, 'another fingerprint (a changed config or secret) finds nothing');
  t.same(got[2], row(), 'the row comes back as it was put');
  t.equal(got[3], null);
  t.same(await k.call('catalogue', 'catalogue/put', { row: row({ savedAt: 2 }) }), { changed: false }, 'the same discovery again');
  t.equal(
    (await k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }))[0]?.savedAt,
    1,
    'and nothing was written',
  );
  t.same(await k.call('catalogue', 'catalogue/put', { row: row({ savedAt: 3, instructions: 'changed' }) }), { changed: true });
  t.same(await k.call('catalogue', 'catalogue/remove', { server: 'docs' }), {});
  t.same(await k.call('catalogue', 'catalogue/remove', { server: 'docs' }), {}, 'removing what is gone is not an error');
  t.same(await k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }), [null]);
});

t.test('bad input is refused with ALBEDO_INVALID_ARGUMENT and changes nothing', async (t) => {
  const { k } = start(t);
  const K = k as unknown as { call(s: string, m: string, p: unknown): Promise<unknown> };
  await k.call('catalogue', 'catalogue/put', { row: row() });
  const bad: Array<[string, unknown]> = [
    ['catalogue/put', { row: { ...row(), instructions: 'changed', fingerprint: 7 } }],
    ['catalogue/put', { row: { ...row(), catalogue: { tools: [{ name: 'x' }], resources: [], resourceTemplates: [], prompts: [] } } }],
    ['catalogue/put', { row: { ...row(), extra: true } }],
    ['catalogue/put', {}],
    ['catalogue/current', { servers: [{ server: 'docs' }] }],
    ['catalogue/current', {}],
    ['catalogue/remove', { server: '' }],
    ['catalogue/normalise', { schemas: [{ type: 'object' }], profile: 'openai-lax' }],
    ['catalogue/normalise', { schemas: [{ type: 'object' }] }],
    ['catalogue/normalise', { schemas: { type: 'object' }, profile: 'portable' }],
    ['catalogue/stats', { loopDelay: 'sometimes' }],
  ];
  for (const [method, params] of bad) {
    const e = await rejection(K.call('catalogue', method, params));
    t.equal(e.code, 'ALBEDO_INVALID_ARGUMENT', `${method} ${JSON.stringify(params).slice(0, 80)}`);
    t.equal(e.outcome, 'not_run');
  }
  const e = await rejection(K.call('catalogue', 'catalogue/put', { row: { ...row(), fingerprint: 7 } }));
  t.same(e.data, { path: ['row', 'fingerprint'] }, 'the error names the field');
  t.same(
    await k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }),
    [row()],
    'the saved row is untouched',
  );
  t.same(await k.call('catalogue', 'catalogue/profiles', {}), [...PROFILES]);
});

t.test('a batch is answered as the in-thread normaliser answers it, in every profile, on the service thread and on the pool', async (t) => {
  const small = start(t);
  const pooled = start(t, { pool: { threshold: 0, chunk: 7 } });
  for (const profile of PROFILES) {
    const want = await normaliseAll(CORPUS, profile);
    t.same(await small.k.call('catalogue', 'catalogue/normalise', { schemas: CORPUS, profile }), want, `${profile}: in the service thread`);
    t.same(
      await pooled.k.call('catalogue', 'catalogue/normalise', { schemas: CORPUS, profile }),
      want,
      `${profile}: on the pool, in chunks, in order`,
    );
  }
  t.match(await stats(small.k), { inThread: PROFILES.length, pooled: 0, pool: null }, 'small batches never made a pool');
  t.match(await stats(pooled.k), { inThread: 0, pooled: PROFILES.length, pool: { threads: Number } });
  t.same(await small.k.call('catalogue', 'catalogue/normalise', { schemas: [], profile: 'portable' }), []);
});

t.test(`with the default options a batch over ${POOL_THRESHOLD} schemas runs on the pool, one at or under it in the thread`, async (t) => {
  const { k } = start(t);
  const at = varied(POOL_THRESHOLD);
  const over = varied(POOL_THRESHOLD + 1);
  t.same(await k.call('catalogue', 'catalogue/normalise', { schemas: at, profile: 'anthropic' }), await normaliseAll(at, 'anthropic'));
  t.match(await stats(k), { inThread: 1, pooled: 0, pool: null });
  t.same(await k.call('catalogue', 'catalogue/normalise', { schemas: over, profile: 'anthropic' }), await normaliseAll(over, 'anthropic'));
  const s = await stats(k);
  t.match(s, { threshold: POOL_THRESHOLD, inThread: 1, pooled: 1, running: 0 });
  t.ok(s.pool && s.pool.maxThreads >= 1 && s.pool.maxThreads <= 2, 'a pool of one or two threads');
  if (LINUX) t.ok(s.pool!.tids.length > 0 && !s.pool!.tids.includes(s.tid!), 'its threads are not the service thread');
});

t.test(`a batch of few schemas but ${POOL_NODES} JSON nodes or more runs on the pool too`, async (t) => {
  const { k } = start(t);
  // One schema whose enum alone has 25,000 values: few schemas, much work.
  const big = [{ type: 'object', properties: { pick: { type: 'string', enum: Array.from({ length: 25_000 }, (_, i) => `v${i}`) } } }];
  t.same(await k.call('catalogue', 'catalogue/normalise', { schemas: big, profile: 'portable' }), await normaliseAll(big, 'portable'));
  t.match(await stats(k), { inThread: 0, pooled: 1 }, 'pooled, not in the service thread');
  t.ok(heavy(big, POOL_NODES) && !heavy(varied(10), POOL_NODES), 'heavy() counts nodes, not schemas');
});

t.test('a 5,000-schema batch leaves the service answering: a call sent after it answers before it', async (t) => {
  const { k } = start(t);
  const schemas = varied(5_000);
  const order: string[] = [];
  const big = k.call('catalogue', 'catalogue/normalise', { schemas, profile: 'portable' }, { timeoutMs: 120_000 }).then((r) => {
    order.push('normalise');
    return r;
  });
  const current = k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }).then((r) => {
    order.push('current');
    return r;
  });
  const [answers] = await Promise.all([big, current]);
  t.same(order, ['current', 'normalise']);
  t.equal(answers.length, 5_000);
  t.same(answers, await normaliseAll(schemas, 'portable'), 'the pool answered as the in-thread normaliser does');
});

t.test(
  'a crash mid-normalise: the call is lost (unknown outcome), the pool threads die with the worker, the next call works, rows stay',
  async (t) => {
    const { k, faults } = start(t, { pool: { chunk: 50 } });
    await k.call('catalogue', 'catalogue/put', { row: row() });
    const restarted: unknown[] = [];
    k.on('kernel', 'service/restarted', (e) => restarted.push(e));
    const { batch, running } = await pooledRunning(k, varied(20_000));
    t.ok(running.running > 0, 'the batch is running on the pool');
    faults.crash('catalogue');
    const e = await rejection(batch);
    t.equal(e.code, 'ALBEDO_SERVICE_LOST');
    t.equal(e.outcome, 'unknown');
    await until(() => restarted.length === 1, 15_000, 'the restart');
    if (LINUX) {
      const gone = [running.tid!, ...running.pool!.tids];
      await until(() => gone.every((tid) => !alive(tid)), 10_000, 'the old worker and its pool threads to end');
      t.pass(`threads ${gone.join(', ')} (the worker and its pool) are gone`);
    }
    const after = await stats(k);
    t.equal(after.pool, null, 'the new incarnation has made no pool yet');
    t.same(
      await k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] }),
      [row()],
      'the saved row is still there (LMDB)',
    );
    const again = varied(POOL_THRESHOLD + 1);
    const answers = await k.call('catalogue', 'catalogue/normalise', { schemas: again, profile: 'gemini' });
    t.same(answers, await normaliseAll(again, 'gemini'), 'large batches work again');
  },
);

t.test(
  'a hung worker is terminated by the heartbeat, and its pool threads with it',
  { skip: !LINUX && 'thread ids are read from /proc' },
  async (t) => {
    const { k, faults } = start(t, { pool: { chunk: 50 } }, { heartbeat: { intervalMs: 200, timeoutMs: 2_000 } });
    const { batch, running } = await pooledRunning(k, varied(20_000));
    faults.hang('catalogue');
    t.equal((await rejection(batch)).code, 'ALBEDO_SERVICE_LOST');
    const gone = [running.tid!, ...running.pool!.tids];
    await until(() => gone.every((tid) => !alive(tid)), 15_000, 'the terminated worker and its pool threads to end');
    t.pass('none survives the terminate');
  },
);

t.test('pool threads end when idle, and at stop', { skip: !LINUX && 'thread ids are read from /proc' }, async (t) => {
  const idle = start(t, { pool: { threshold: 0, idleTimeoutMs: 100 } });
  await idle.k.call('catalogue', 'catalogue/normalise', { schemas: CORPUS, profile: 'portable' });
  const tids = (await stats(idle.k)).pool!.tids;
  t.ok(tids.length > 0 && tids.every(alive));
  await until(() => tids.every((tid) => !alive(tid)), 10_000, 'the idle pool threads to end');
  t.match(await stats(idle.k), { pool: { threads: 0, tids: [] } });

  const stopped = start(t, { pool: { threshold: 0 } });
  await stopped.k.call('catalogue', 'catalogue/normalise', { schemas: CORPUS, profile: 'portable' });
  const s = await stats(stopped.k);
  await stopped.k.stop(5_000);
  const gone = [s.tid!, ...s.pool!.tids];
  await until(() => gone.every((tid) => !alive(tid)), 10_000, 'the stopped worker and its pool threads to end');
  t.pass('a graceful stop ends them');
});

t.test('a caller that gives up stops its chunks: queued ones are dropped, the pool is free again', async (t) => {
  const { k } = start(t, { pool: { chunk: 50 } });
  const ac = new AbortController();
  const { batch } = await pooledRunning(k, varied(20_000), { signal: ac.signal });
  ac.abort();
  t.equal((await rejection(batch)).code, 'ALBEDO_DEADLINE');
  let s = await stats(k);
  const end = Date.now() + 15_000;
  while (s.running > 0 && Date.now() < end) s = await new Promise((r) => setTimeout(r, 20)).then(() => stats(k));
  t.equal(s.running, 0, 'no chunk of it is left running or queued');
  t.ok(s.cancelled > 0, `${s.cancelled} of its chunks were dropped or stopped, not run to the end`);
  const next = varied(POOL_THRESHOLD + 1);
  t.same(
    await k.call('catalogue', 'catalogue/normalise', { schemas: next, profile: 'portable' }),
    await normaliseAll(next, 'portable'),
    'the next batch runs',
  );
});

t.test(
  'a schema cache over the service: one batch per pass; a pass the crash loses keeps nothing and rejects, the next one works',
  async (t) => {
    const { k, faults } = start(t, { pool: { chunk: 50 } });
    let calls = 0;
    const cache = new SchemaCache({
      batch: (schemas, profile) => {
        calls++;
        return k.call('catalogue', 'catalogue/normalise', { schemas, profile }, { timeoutMs: 120_000 });
      },
    });
    await cache.warm([...CORPUS, ...CORPUS], 'openai');
    t.equal(calls, 1, 'one call for the whole pass, equal schemas sent once');
    const want = await normaliseAll(CORPUS, 'openai');
    t.same(
      CORPUS.map((s) => cache.lookup(s, 'openai')),
      want,
      "the answers are the in-thread normaliser's",
    );

    const big = varied(5_000);
    const warming = cache.warm(big, 'portable');
    warming.catch(() => {});
    const end = Date.now() + 30_000;
    while ((await stats(k)).running === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    faults.crash('catalogue');
    const e = await rejection(warming);
    t.equal(e.code, 'ALBEDO_SERVICE_LOST', 'the pass rejects with the lost call');
    t.notOk(cache.has([big[0]], 'portable'), 'nothing of the lost batch is kept');
    t.match(cache.lookup(big[0], 'portable'), { ok: false, code: 'not_prepared' });
    await cache.warm(big, 'portable');
    t.ok(cache.has(big, 'portable'), 'the next pass (after the restart) sends them again');
    t.same(cache.lookup(big[4_321], 'portable'), (await normaliseAll([big[4_321]], 'portable'))[0]);
  },
);
