// The schema cache between the async normaliser and the synchronous
// definitions: one async pass, then a synchronous Normalise over its answers;
// the argument plan reaches the route; each schema is normalised once per
// profile; what no pass prepared is left out, never sent unchecked.
import t from 'tap';
import type { NormaliseResult } from '../../protocol/catalogue.ts';
import type { Catalogue } from '../../protocol/mcp.ts';
import { catalogueDefinitions, definitionSchemas, type ServerCatalogue } from '../../services/catalogue/definitions.ts';
import { SchemaCache, prepareNormaliser } from '../../services/catalogue/schema-cache.ts';
import { normalise, restoreArguments } from '../../services/catalogue/schema/normalise.ts';

const catalogue = (tools: Catalogue['tools']): Catalogue => ({ tools, resources: [], resourceTemplates: [], prompts: [] });
const odd = { type: 'object', properties: { 'my-arg': { type: 'string' }, 'filter.id': { type: 'string' } }, required: ['my-arg'] };
const entries: ServerCatalogue[] = [
  {
    server: 'odd',
    catalogue: catalogue([
      { name: 'lookup', inputSchema: odd },
      { name: 'plain', inputSchema: { type: 'object' } },
    ]),
  },
];

t.test('the real normaliser through one async pass: renamed properties, and the plan on the route', async (t) => {
  const lookup = await prepareNormaliser((s, p) => normalise(s, p as never), definitionSchemas(entries), 'portable');
  const defs = catalogueDefinitions(entries, { normalise: lookup, profile: 'portable' });
  t.equal(defs.tools.length, 2);
  const tool = defs.tools[0]!;
  t.same(Object.keys(tool.inputSchema.properties as object), ['my_arg', 'filter_id']);
  const route = defs.routes.get(tool.name)!;
  t.match(route, { server: 'odd', kind: 'tool', tool: 'lookup', args: { props: { my_arg: { from: 'my-arg' } } } });
  t.same(restoreArguments({ my_arg: 'a', filter_id: 'b' }, route.args), { 'my-arg': 'a', 'filter.id': 'b' });
  t.notOk('args' in defs.routes.get(defs.tools[1]!.name)!, 'a schema with nothing renamed carries no plan');
  t.ok(
    defs.notes.some((n) => n.includes('property_renamed')),
    "the normaliser's notes are kept",
  );
});

t.test('each schema is normalised once per profile; concurrent passes share; unprepared schemas are refused', async (t) => {
  let calls = 0;
  const counting = async (s: unknown, p: string): Promise<NormaliseResult> => {
    calls++;
    return normalise(s, p as never);
  };
  const cache = new SchemaCache(counting);
  const schemas = definitionSchemas(entries);
  t.notOk(cache.has(schemas, 'portable'));
  await Promise.all([cache.warm(schemas, 'portable'), cache.warm(schemas, 'portable')]);
  t.equal(calls, 2, 'two schemas, two normalisations, however many passes');
  t.ok(cache.has(schemas, 'portable'));
  await cache.warm(structuredClone(schemas), 'portable');
  t.equal(calls, 2, 'equal schemas (another copy) hit the cache');
  await cache.warm(schemas, 'anthropic');
  t.equal(calls, 4, 'another profile is another answer');

  const answer = cache.lookup(odd, 'portable');
  t.ok(answer.ok && Object.isFrozen(answer.schema), 'answers are frozen: sessions share them');
  const missing = cache.lookup({ type: 'object', properties: { x: { type: 'string' } } }, 'portable');
  t.match(missing, { ok: false, code: 'not_prepared' });
  const other: ServerCatalogue = {
    server: 'new',
    catalogue: catalogue([{ name: 'x', inputSchema: { type: 'object', properties: { x: { type: 'number' } } } }]),
  };
  const defs = catalogueDefinitions([...entries, other], { normalise: cache.lookup });
  t.equal(defs.tools.length, 2, 'the unprepared tool is left out');
  t.match(defs.leftOut, [{ server: 'new', operation: 'x', reason: 'schema_refused' }]);
});

t.test('the cache is bounded; a normaliser that throws is a refusal', async (t) => {
  const cache = new SchemaCache(async (s) => {
    if ((s as { boom?: boolean }).boom) throw new Error('bug');
    return { ok: true, schema: s as Record<string, unknown>, notes: [] };
  }, 2);
  const a = { type: 'object', title: 'a' };
  const b = { type: 'object', title: 'b' };
  const c = { type: 'object', title: 'c' };
  await cache.warm([a, b, c], 'p');
  t.notOk(cache.has([a], 'p'), 'the least recently used answer went');
  t.ok(cache.has([b, c], 'p'));
  await cache.warm([{ boom: true }], 'p');
  t.match(cache.lookup({ boom: true }, 'p'), { ok: false, code: 'internal' });
});
