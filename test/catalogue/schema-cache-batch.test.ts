// The schema cache over a batch normaliser (the catalogue service's
// catalogue/normalise): one call per pass with what is missing, each schema
// once; concurrent passes share; a batch that rejects keeps nothing and its
// error reaches every pass that waited for it. The service itself is
// exercised in service.test.ts; here the batch is a function under control.
import t from 'tap';
import type { NormaliseResult } from '../../protocol/catalogue.ts';
import { SchemaCache, type BatchNormalise } from '../../services/catalogue/schema-cache.ts';
import { normaliseAll } from '../../services/catalogue/schema/normalise.ts';
import { rejection } from '../helpers.ts';
import { AlbedoError } from '../../protocol/errors.ts';

const schema = (title: string): Record<string, unknown> => ({ type: 'object', title, properties: { q: { type: 'string' } } });
const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(schema) as [
  Record<string, unknown>,
  Record<string, unknown>,
  Record<string, unknown>,
  Record<string, unknown>,
];

/** A batch normaliser that records what it was sent and answers when told to. */
function controlled() {
  const sent: unknown[][] = [];
  const pending: Array<{ resolve(): void; reject(e: unknown): void }> = [];
  const batch: BatchNormalise = (schemas, profile) => {
    sent.push(schemas);
    return new Promise<NormaliseResult[]>((resolve, reject) => {
      pending.push({ resolve: () => void normaliseAll(schemas, profile as never).then(resolve), reject });
    });
  };
  return { batch, sent, pending };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

t.test('one batch per pass, with each missing schema once; what is kept is not sent again', async (t) => {
  const n = controlled();
  const cache = new SchemaCache({ batch: n.batch });
  const pass = cache.warm([a, b, structuredClone(a), b], 'portable');
  await tick();
  t.same(n.sent, [[a, b]], 'one call, equal schemas (by JSON) once');
  n.pending[0]!.resolve();
  await pass;
  t.ok(cache.has([a, b], 'portable'));
  t.same(cache.lookup(a, 'portable'), (await normaliseAll([a], 'portable'))[0]);
  const more = cache.warm([a, b, c], 'portable');
  await tick();
  t.same(n.sent[1], [c], 'a later pass sends only what is not kept');
  n.pending[1]!.resolve();
  await more;
});

t.test('concurrent passes share the schemas in flight: none is normalised twice', async (t) => {
  const n = controlled();
  const cache = new SchemaCache({ batch: n.batch });
  const first = cache.warm([a, b], 'portable');
  const second = cache.warm([b, c], 'portable');
  await tick();
  t.same(n.sent, [[a, b], [c]], 'the second pass sends only what the first is not normalising');
  n.pending[1]!.resolve();
  await tick();
  t.ok(cache.has([c], 'portable'), "the second pass's own answer is kept as soon as it arrives");
  t.notOk(cache.has([b], 'portable'));
  n.pending[0]!.resolve();
  await Promise.all([first, second]);
  t.ok(cache.has([a, b, c], 'portable'));
  await cache.warm([a, b, c], 'portable');
  t.equal(n.sent.length, 2, 'a pass with everything kept sends nothing');
});

t.test('a batch that rejects keeps nothing, and its error reaches every pass that waited for it', async (t) => {
  const n = controlled();
  const cache = new SchemaCache({ batch: n.batch });
  const lost = new AlbedoError('ALBEDO_SERVICE_LOST', 'the catalogue worker was lost', { outcome: 'unknown' });
  const first = cache.warm([a, b], 'portable');
  const second = cache.warm([b, d], 'portable');
  await tick();
  t.same(n.sent, [[a, b], [d]]);
  n.pending[1]!.resolve();
  n.pending[0]!.reject(lost);
  t.equal(await rejection(first), lost, 'the pass that sent it rejects with its error');
  t.equal(await rejection(second), lost, 'so does the pass that waited for one of its schemas');
  t.notOk(cache.has([a], 'portable'));
  t.notOk(cache.has([b], 'portable'));
  t.match(
    cache.lookup(a, 'portable'),
    { ok: false, code: 'not_prepared' },
    'lookup refuses it: never sent unchecked, never a kept refusal',
  );
  t.ok(cache.has([d], 'portable'), 'the batch that succeeded is kept');

  const retry = cache.warm([a, b, d], 'portable');
  await tick();
  t.same(n.sent[2], [a, b], 'the next pass sends the lost schemas again');
  n.pending[2]!.resolve();
  await retry;
  t.ok(cache.has([a, b, d], 'portable'));
});

t.test('a batch answering the wrong number of results is an error, and nothing of it is kept', async (t) => {
  const short = new SchemaCache({ batch: async (schemas) => (await normaliseAll(schemas)).slice(1) });
  const e = await rejection(short.warm([a, b], 'portable'));
  t.equal(e.code, 'ALBEDO_INVALID_RESPONSE');
  t.notOk(short.has([a], 'portable'));
  const thrown = new SchemaCache({
    batch: () => {
      throw new Error('sync throw');
    },
  });
  await t.rejects(thrown.warm([a], 'portable'), { message: 'sync throw' }, 'a batch that throws at once rejects the pass as well');
  t.notOk(thrown.has([a], 'portable'));
});
