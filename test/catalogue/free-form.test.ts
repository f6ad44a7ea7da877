// No tool lost to a profile (issue 22, item 6): real tools whose required
// arguments are free-form objects, or arrays of them (a document database's
// insert-many/update-many/aggregate, a notes server's create-page), go through
// every profile. Where a profile cannot describe such a value (portable and
// gemini have no free-form object, openai-strict none either), it is said as
// JSON text, and restoreArguments gives the server the parsed value back;
// text that is not JSON, or not of the declared kind, is refused naming the argument.
import t from 'tap';
import { AlbedoError } from '../../protocol/errors.ts';
import { argPlanSchema } from '../../protocol/catalogue.ts';
import { normalise, restoreArguments, PROFILES, type Profile } from '../../services/catalogue/schema/normalise.ts';
import { CHECKERS } from './provider-rules.ts';
import { FREE_FORM_TOOLS, REAL_ARGS, said } from '../fixtures/free-form-tools.ts';

type S = Record<string, any>;

function caught(fn: () => unknown): AlbedoError | undefined {
  try {
    fn();
  } catch (err) {
    if (AlbedoError.is(err)) return err;
    throw err;
  }
  return undefined;
}

t.test('every profile advertises every tool, with a schema its rules accept, and gets the real objects back', async (t) => {
  for (const p of PROFILES) {
    for (const tool of FREE_FORM_TOOLS) {
      const r = await normalise(tool.inputSchema, p);
      if (!r.ok) {
        t.fail(`${p}: ${tool.name} refused: ${r.code} ${r.reason}`);
        continue;
      }
      t.same(CHECKERS[p](r.schema), [], `${p}: ${tool.name} passes the ${p} rules`);
      const shown = Object.keys(r.schema.properties as S).map((k) => r.args?.props?.[k]?.from ?? k);
      t.same(shown.sort(), Object.keys(tool.inputSchema.properties).sort(), `${p}: ${tool.name} keeps every property`);
      t.notOk(
        r.notes.some((n) => n.startsWith('property_dropped')),
        `${p}: ${tool.name}: nothing dropped`,
      );
      if (r.args) t.ok(argPlanSchema.safeParse(r.args).success, `${p}: ${tool.name}: the plan is a valid ArgPlan`);
      const real = REAL_ARGS[tool.name]!;
      const model = said(real, r.args);
      t.same(restoreArguments(model, r.args), real, `${p}: ${tool.name}: the model's form comes back as the server's objects`);
      t.same(restoreArguments(real, r.args), real, `${p}: ${tool.name}: the real objects pass through unchanged`);
    }
  }
});

t.test('subset and strict profiles say free-form values as JSON text, at the nearest level that works', async (t) => {
  const schemaOf = (name: string): unknown => FREE_FORM_TOOLS.find((x) => x.name === name)!.inputSchema;
  for (const p of ['portable', 'gemini', 'openai-strict'] as Profile[]) {
    const insert = await normalise(schemaOf('insert-many'), p);
    const props = (insert.ok ? insert.schema.properties : {}) as S;
    t.equal(props.documents?.type, 'string', `${p}: documents is JSON text`);
    t.match(props.documents.description, /JSON/, `${p}: …and says so`);
    t.ok(insert.ok && (insert.schema.required as string[]).includes('documents'), `${p}: …still required`);
    t.same(insert.ok && insert.args?.props?.documents, { plan: { json: 'array' } }, `${p}: the plan parses an array`);

    const bulk = await normalise(schemaOf('bulk-update'), p);
    const update = (bulk.ok ? (bulk.schema.properties as S).update : {}) as S;
    t.equal(update.type, 'object', `${p}: a declared object stays an object…`);
    const set = Object.entries(update.properties ?? {}).find(([k]) => k.endsWith('set'))?.[1] as S | undefined;
    t.match(set?.description, /JSON/, `${p}: …and its free-form $set is JSON text`);

    const pages = await normalise(schemaOf('notion-create-pages'), p);
    const item = (pages.ok ? (pages.schema.properties as S).pages.items : {}) as S;
    t.equal(item.type, 'object', `${p}: the pages' items stay objects`);
    t.match(item.properties.properties.description, /JSON/, `${p}: each page's free-form properties are JSON text`);

    const rows = await normalise(schemaOf('append-table-rows'), p);
    t.same(
      rows.ok && rows.args?.props?.cells,
      { plan: { json: 'array' } },
      `${p}: arrays of arrays of objects: the outer array is JSON text`,
    );
  }
  for (const p of ['anthropic', 'openai', 'bedrock'] as Profile[]) {
    const r = await normalise(schemaOf('insert-many'), p);
    t.equal(r.ok && (r.schema.properties as S).documents.type, 'array', `${p}: a free-form object is said as itself`);
    t.notOk(r.ok && r.args, `${p}: no plan needed`);
  }
});

t.test('JSON text that is not JSON, or not of the declared kind, is refused naming the argument', async (t) => {
  const insert = await normalise(FREE_FORM_TOOLS[0].inputSchema, 'portable');
  const plan = insert.ok ? insert.args : undefined;
  const base = { database: 'shop', collection: 'orders' };
  const bad = caught(() => restoreArguments({ ...base, documents: '[{"a": 1' }, plan));
  t.match(bad, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run', data: { argument: 'documents', path: ['documents'] } }, 'not JSON');
  const kind = caught(() => restoreArguments({ ...base, documents: '{"a": 1}' }, plan));
  t.match(kind, { code: 'ALBEDO_INVALID_ARGUMENT', data: { path: ['documents'] } }, 'an object where an array is declared');

  const pages = await normalise(FREE_FORM_TOOLS.find((x) => x.name === 'notion-create-pages')!.inputSchema, 'gemini');
  const deep = caught(() => restoreArguments({ pages: [{ properties: '["a"]' }] }, pages.ok ? pages.args : undefined));
  t.match(deep, { data: { argument: 'pages[0].properties', path: ['pages', 0, 'properties'] } }, 'a nested argument, by its path');
  t.same(
    restoreArguments({ pages: [{ properties: ' {"title": "x"} ' }] }, pages.ok ? pages.args : undefined),
    { pages: [{ properties: { title: 'x' } }] },
    'JSON text around whitespace is JSON',
  );
});

t.test('optional free-form properties: said as JSON text where a profile would drop them, kept where it can say them', async (t) => {
  const schema = {
    type: 'object',
    properties: { q: { type: 'string' }, meta: { anyOf: [{ type: 'object', additionalProperties: true }, { type: 'null' }] } },
    required: ['q'],
  };
  for (const p of PROFILES) {
    const r = await normalise(schema, p);
    t.ok(r.ok, `${p}: accepted`);
    if (!r.ok) continue;
    t.same(CHECKERS[p](r.schema), [], `${p}: valid`);
    t.ok('meta' in (r.schema.properties as S), `${p}: meta is offered`);
    const back = restoreArguments(said({ q: 'x', meta: { a: [1] } }, r.args), r.args);
    t.same(back, { q: 'x', meta: { a: [1] } }, `${p}: meta reaches the server as an object`);
  }
});
