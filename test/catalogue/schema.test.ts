// Tool input schemas normalised per provider profile, against a corpus: the real
// tool schemas of server-everything and the SDK fixture servers (live), the
// conformance suite's json-schema-2020-12 tool, and hand-made hard cases; every
// output is checked against the providers' documented rules (provider-rules.ts).
// server-filesystem is not in node_modules, so it is not part of the corpus.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';
import path from 'node:path';
import { albedoFor, newTag, server, fixture, EVERYTHING, ROOT } from '../helpers.ts';
import {
  normalise,
  normaliseAll,
  restoreArguments,
  PROFILES,
  BOUNDS,
  type NormaliseResult,
  type Profile,
} from '../../services/catalogue/schema/normalise.ts';
import { CUT_MARK } from '../../services/catalogue/schema/profiles.ts';
import { CHECKERS, checkPortable, visit } from './provider-rules.ts';

type S = Record<string, any>;
const load = (name: string): S => JSON.parse(readFileSync(fixture(`schemas/${name}`), 'utf8'));
const HARD: Record<string, unknown> = load('hard.json').cases;
const CONFORMANCE: Array<{ name: string; inputSchema: unknown }> = load('conformance.json').tools;
const EVERYTHING_DUMP: Array<{ name: string; inputSchema: unknown }> = load('everything.json').tools;
/** Refusals a valid outcome may carry; `internal` (a bug) never is. */
const REFUSALS = new Set([
  'not_object',
  'accepts_nothing',
  'root_not_object',
  'too_many_properties',
  'required_unsupported',
  'strict_unsupported',
  'too_large',
]);
const RICH: Profile[] = ['openai', 'anthropic', 'bedrock'];
const SUBSET: Profile[] = ['portable', 'gemini'];

/** Normalises for `profile`; an accepted schema must pass the profile's checker, a refusal must carry a known code. */
async function checked(t: Test, schema: unknown, profile: Profile, label: string): Promise<NormaliseResult> {
  const r = await normalise(schema, profile);
  if (r.ok) t.same(CHECKERS[profile](r.schema), [], `${label} (${profile}) passes the ${profile} rules`);
  else t.ok(REFUSALS.has(r.code), `${label} (${profile}) refused with a known code: ${r.code}`);
  return r;
}

const ok = (r: NormaliseResult): S => {
  if (!r.ok) throw new Error(`expected a schema, got a refusal: ${r.code} ${r.reason}`);
  return r.schema;
};
/** `count` properties named by `name`, each with the schema `schema(i)`. */
const props = (count: number, name: (i: number) => string, schema: (i: number) => S): S =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [name(i), schema(i)]));
const shape = async (name: string, p: Profile): Promise<S> => ok(await normalise(HARD[name], p));
const hasNote = (r: NormaliseResult, code: string): boolean => r.ok && r.notes.some((n) => n.startsWith(`${code} `));

t.test('the real corpus: server-everything and the SDK fixtures, live, in every profile', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const sources: Array<[string, string, string[]]> = [
    ['server-everything', EVERYTHING, ['stdio']],
    ['sdk2 fixture', fixture('sdk-server.ts'), ['--tools', '3']],
    ['sdk1 fixture', fixture('sdk1-server.ts'), []],
    ['sdk1 paged fixture', fixture('sdk1-paged-server.ts'), ['--tools', '12', '--page', '5']],
  ];
  let count = 0;
  for (const [label, script, args] of sources) {
    const c = await a.connect(server(tag, script, args));
    const tools = await c.listTools();
    t.ok(tools.length > 0, `${label} lists tools`);
    if (label === 'server-everything') {
      const listed = tools.map((x) => ({ name: x.name, inputSchema: x.inputSchema }));
      t.same(listed, EVERYTHING_DUMP, 'test/fixtures/schemas/everything.json matches the installed server (regenerate it if not)');
    }
    for (const tool of tools) {
      for (const p of PROFILES) {
        const r = await checked(t, tool.inputSchema, p, `${label}/${tool.name}`);
        t.ok(r.ok, `${label}/${tool.name} is accepted in ${p}`);
        count++;
      }
    }
    await c.close();
  }
  t.ok(count >= 6 * 30, `${count} tool × profile outputs checked`);
});

t.test("the conformance suite's json-schema-2020-12 tool, as the installed package defines it", async (t) => {
  const dist = readFileSync(path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js'), 'utf8');
  const start = dist.indexOf('const ir=`json_schema_2020_12_tool`,');
  const end = dist.indexOf(';function sr(', start);
  t.ok(start > 0 && end > start, "the tool's schema literal is found in the conformance package");
  const installed = vm.runInNewContext(`${dist.slice(start, end)};or`);
  t.same(JSON.parse(JSON.stringify(installed)), CONFORMANCE[0].inputSchema, "the fixture is the package's schema");
  for (const p of PROFILES) {
    const r = ok(await checked(t, CONFORMANCE[0].inputSchema, p, 'json_schema_2020_12_tool'));
    t.same(Object.keys(r.properties).sort(), ['address', 'contactMethod', 'email', 'name', 'phone'], `${p}: the parameters survive`);
    for (const k of ['allOf', 'anyOf', 'if', 'then', 'else', '$defs', '$schema']) t.notOk(k in r, `${p}: no root ${k}`);
    t.ok(
      [r.properties.address.type].flat().includes('object') && 'street' in r.properties.address.properties,
      `${p}: the $ref to $defs/address is inlined`,
    );
  }
  const echo = CONFORMANCE[1].inputSchema;
  for (const p of RICH) t.ok((await checked(t, echo, p, 'json_schema_echo')).ok, `${p}: the echo tool's free-form object is kept`);
  for (const p of [...SUBSET, 'openai-strict' as const]) {
    const r = ok(await checked(t, echo, p, 'json_schema_echo'));
    t.equal(r.properties.schema.type, 'string', `${p}: a required free-form object is said as JSON text, so the tool is kept`);
    const plan = (await normalise(echo, p)) as S;
    t.same(plan.args, { props: { schema: { plan: { json: 'object' } } } }, `${p}: …and parsed back before the call`);
  }
});

t.test("hand-made hard cases pass every profile's rules, the same way twice", async (t) => {
  for (const [name, schema] of Object.entries(HARD)) {
    for (const p of PROFILES) {
      const r = await checked(t, schema, p, name);
      t.same(await normalise(schema, p), r, `${name} (${p}) is deterministic`);
    }
  }
});

t.test('$ref cycles are cut where they recur, with a note; one level of the recursive type is kept', async (t) => {
  for (const p of PROFILES.filter((x) => x !== 'openai-strict')) {
    const r = await normalise(HARD.ref_cycle_list, p);
    const s = ok(r);
    t.ok(hasNote(r, 'cycle_cut'), `${p}: noted`);
    t.equal(s.properties.head.properties.value.type, 'string', `${p}: the node's own fields are inlined`);
    if (SUBSET.includes(p))
      t.equal(s.properties.head.properties.next.type, 'string', `${p}: the cut is JSON text (no free-form objects in the subset)`);
    else t.same(s.properties.head.properties.next.type, 'object', `${p}: the cut is a permissive object`);
  }
  const strict = ok(await normalise(HARD.ref_cycle_list, 'openai-strict'));
  t.same(strict.properties.head.properties.next.type, ['string', 'null'], 'strict mode cannot say "any object": the cut is JSON text');
  for (const name of ['ref_cycle_root', 'ref_cycle_mutual', 'ref_cycle_with_siblings']) {
    const r = await normalise(HARD[name], 'anthropic');
    t.ok(hasNote(r, 'cycle_cut'), `${name}: cut`);
  }
});

t.test('root combinators are merged or dropped; non-object roots are refused or coerced', async (t) => {
  for (const p of PROFILES) {
    const one = ok(await normalise(HARD.one_of_root, p));
    t.same(Object.keys(one.properties).sort(), ['path', 'url'], `${p}: oneOf variants merged`);
    t.notOk(
      'oneOf' in one || (!p.startsWith('openai-strict') && 'required' in one),
      `${p}: no oneOf, nothing required that only one variant needs`,
    );
    const all = ok(await normalise(HARD.all_of_root, p));
    t.same(Object.keys(all.properties).sort(), ['a', 'b'], `${p}: allOf merged`);
    const req = ok(await normalise(HARD.any_of_root_required_only, p));
    t.notOk('anyOf' in req, `${p}: a constraint-only anyOf is dropped`);
  }
  const refusals: Array<[unknown, string]> = [
    [{ type: 'string' }, 'root_not_object'],
    [[1, 2], 'not_object'],
    [null, 'not_object'],
    [false, 'accepts_nothing'],
    ['text', 'not_object'],
    [42, 'not_object'],
    [undefined, 'not_object'],
    [{ type: ['array', 'null'] }, 'root_not_object'],
  ];
  for (const [schema, code] of refusals) {
    for (const p of PROFILES) {
      const r = await normalise(schema, p);
      t.equal(!r.ok && r.code, code, `${JSON.stringify(schema)} (${p}) → ${code}`);
    }
  }
  const roots = [
    [true, 'true'],
    [{}, '{}'],
    [HARD.empty_object_root, 'type object'],
    [HARD.no_type_root, 'no type'],
    [HARD.nullable_root, 'object or null'],
  ] as const;
  for (const [schema, label] of roots) {
    for (const p of PROFILES) t.equal(ok(await checked(t, schema, p, label)).type, 'object', `${label} (${p}) becomes an object root`);
  }
  t.same(
    ok(await normalise({ type: 'object' }, 'gemini')),
    { type: 'object' },
    'gemini: no properties means a declaration without parameters',
  );
  t.same(ok(await normalise({ type: 'object' }, 'portable')), { type: 'object', properties: {} });
  const bad = await normalise({ type: 'object' }, 'nope' as Profile);
  t.equal(!bad.ok && bad.code, 'invalid_profile');
});

t.test('const, type arrays, missing items, booleans, formats: rewritten where the profile rejects them', async (t) => {
  const g = ok(await normalise(HARD.consts_and_enums, 'gemini'));
  t.same(g.properties.kind, { type: 'string', enum: ['fixed'] }, 'gemini: const → one-value enum');
  t.equal(g.properties.version.type, 'integer', 'gemini: a numeric const keeps its type…');
  t.notOk('enum' in g.properties.numbers, '…and integer enums are described, not sent (enum only for STRING)');
  t.same(g.properties.strings.enum, ['x', 'y'], 'repeated enum values once');
  t.equal(ok(await normalise(HARD.consts_and_enums, 'anthropic')).properties.kind.const, 'fixed', 'anthropic keeps const');

  const types = {
    g: await shape('type_arrays', 'gemini'),
    p: await shape('type_arrays', 'portable'),
    a: await shape('type_arrays', 'anthropic'),
  };
  t.same(types.g.properties.nullable_string, { type: 'string', nullable: true }, 'gemini: ["string","null"] → string + nullable');
  t.same(types.p.properties.nullable_string, { type: 'string' }, 'portable: null is not offered');
  t.same(types.a.properties.nullable_string.type, ['string', 'null'], 'anthropic keeps the type array');
  t.equal(types.g.properties.string_or_number.type, 'string', 'two types collapse to the first');
  t.notOk('only_null' in types.g.properties, 'a null-only property cannot be said in the subset: left out');

  const items = {
    o: await shape('missing_items', 'openai'),
    s: await shape('missing_items', 'openai-strict'),
    g: await shape('missing_items', 'gemini'),
    a: await shape('missing_items', 'anthropic'),
  };
  t.same(items.o.properties.tags.items, {}, 'openai: arrays are given items');
  t.same(items.s.properties.tags.items.type, 'string', 'strict and gemini: strings assumed');
  t.same(items.g.properties.tags.items, { type: 'string' });
  t.equal(items.a.properties.tuple.prefixItems.length, 2, 'anthropic: a draft-07 tuple becomes prefixItems');
  t.equal(items.g.properties.nested.items.items.type, 'string', 'nested arrays too');

  const bools = ok(await normalise(HARD.boolean_schemas, 'portable'));
  t.equal(bools.properties.anything.type, 'string', 'portable: `true` (any value) is offered as a string');
  t.notOk('nothing' in bools.properties, '`false` (never valid) is left out');
  t.same(ok(await normalise(HARD.boolean_schemas, 'anthropic')).properties.nothing, { not: {} }, 'anthropic: `false` as {not:{}}');

  const ext = {
    g: ok(await normalise(HARD.extensions_and_values, 'gemini')),
    a: ok(await normalise(HARD.extensions_and_values, 'anthropic')),
  };
  t.equal(ext.g.properties.count.format, 'int64', 'gemini keeps its formats');
  t.notOk('format' in ext.g.properties.mail, 'gemini: an unsupported format goes into the description');
  t.match(ext.g.properties.mail.description, /email/);
  t.notOk('x-mcp-header' in ext.a.properties.region, 'extension keywords are not sent to the model');
  t.notOk('$schema' in ext.a || '$id' in ext.a, 'no $schema/$id after inlining');

  const drafts = ok(await normalise(HARD.old_drafts, 'anthropic'));
  t.same(
    [drafts.properties.n.exclusiveMinimum, drafts.properties.n.minimum],
    [0, undefined],
    'draft-04 boolean exclusiveMinimum rewritten',
  );
  t.same(drafts.properties.openapi.type, ['string', 'null'], 'OpenAPI nullable read');
  t.same(drafts.properties.pair.dependentRequired, { a: ['b'] }, 'draft-07 dependencies split');
});

t.test('property names a provider rejects are renamed, and restoreArguments maps them back', async (t) => {
  for (const p of ['anthropic', 'bedrock', 'gemini', 'portable'] as const) {
    const r = await normalise(HARD.property_names, p);
    const s = ok(r);
    t.ok(r.ok && r.args, `${p}: an argument plan is returned`);
    const names = Object.keys(s.properties);
    t.equal(names.length, 11, `${p}: no property lost`);
    t.equal(new Set(names).size, names.length, `${p}: renamed names are distinct`);
    t.ok(r.ok && r.args?.props && Object.values(r.args.props).some((x) => x.from === 'filter[id]'), `${p}: the plan knows filter[id]`);
    const modelArgs = Object.fromEntries(
      names.map((n) => [n, n === 'nested' ? { [Object.keys(s.properties.nested.properties)[0]]: 1 } : `v-${n}`]),
    );
    const restored = restoreArguments(modelArgs, r.ok ? r.args : undefined) as S;
    t.same(Object.keys(restored).sort(), Object.keys((HARD.property_names as S).properties).sort(), `${p}: the server's names come back`);
    t.same(restored.nested, { 'deep key': 1 }, `${p}: nested renames come back`);
    t.equal(s.required.length, 3, `${p}: required follows the renames`);
  }
  const o = ok(await normalise(HARD.property_names, 'openai'));
  t.ok('filter[id]' in o.properties, 'openai documents no property-name rule: names kept');
});

t.test('openai-strict: every property required, optional ones nullable, and their nulls dropped on the way back', async (t) => {
  const schema = {
    type: 'object',
    properties: {
      q: { type: 'string' },
      limit: { type: 'integer' },
      sort: { type: 'string', enum: ['asc', 'desc'] },
      f: { type: 'object', properties: { a: { type: 'string' } } },
    },
    required: ['q'],
  };
  const r = await normalise(schema, 'openai-strict');
  const s = ok(r);
  t.same(s.required, ['q', 'limit', 'sort', 'f']);
  t.equal(s.additionalProperties, false);
  t.same(s.properties.limit.type, ['integer', 'null']);
  t.same(s.properties.sort.enum, ['asc', 'desc', null]);
  t.same(s.properties.f.properties.a.type, ['string', 'null'], 'nested objects too');
  const back = restoreArguments({ q: 'x', limit: null, sort: 'asc', f: { a: null } }, r.ok ? r.args : undefined);
  t.same(back, { q: 'x', sort: 'asc', f: {} }, 'nulls of optional properties are dropped, values kept');
  t.same(restoreArguments({ q: 'x' }, undefined), { q: 'x' }, 'no plan, no change');
});

t.test('bounds: 10,000-value enums, 50-level nesting, 1 MB descriptions, property counts, size', async (t) => {
  const bigEnum = {
    type: 'object',
    properties: { e: { type: 'string', enum: Array.from({ length: 10_000 }, (_, i) => `value-${i}`) } },
    required: ['e'],
  };
  let deep: S = { type: 'string' };
  for (let i = 0; i < 50; i++) deep = { type: 'object', properties: { child: deep, leaf: { type: 'integer' } }, required: ['leaf'] };
  const bigDesc = {
    type: 'object',
    description: 'r'.repeat(1_000_000),
    properties: { a: { type: 'string', description: 'd'.repeat(1_000_000) } },
  };
  const many = {
    type: 'object',
    properties: props(
      300,
      (i) => `p${i}`,
      () => ({ type: 'string' }),
    ),
    required: ['p299', 'p250'],
  };
  const wide = {
    type: 'object',
    properties: props(
      100,
      (i) => `p${i}`,
      () => ({ type: 'string', description: 'w'.repeat(1_000) }),
    ),
  };
  for (const p of PROFILES) {
    const e = await checked(t, bigEnum, p, '10,000-value enum');
    t.notOk('enum' in ok(e).properties.e, `${p}: the enum is dropped…`);
    t.ok(hasNote(e, 'enum_dropped'), `${p}: …with a note`);
    const d = await checked(t, deep, p, '50 levels');
    t.ok(hasNote(d, 'depth_cut'), `${p}: deeper subtrees cut, with a note`);
    if (p === 'openai-strict') t.ok(hasNote(d, 'json_text'), 'strict: a cut subtree is said as JSON text');
    const b = ok(await checked(t, bigDesc, p, '1 MB description'));
    t.equal(b.properties.a.description.length, BOUNDS.maxDescription, `${p}: cut to the bound…`);
    t.ok(b.properties.a.description.endsWith(CUT_MARK), `${p}: …and marked`);
    const m = ok(await checked(t, many, p, '300 properties'));
    t.equal(Object.keys(m.properties).length, BOUNDS.maxProperties, `${p}: ${BOUNDS.maxProperties} properties kept`);
    t.ok('p299' in m.properties && 'p250' in m.properties, `${p}: required ones first`);
    const w = await checked(t, wide, p, '100 KB of descriptions');
    t.ok(hasNote(w, 'size_fitted'), `${p}: shaped again to fit ${BOUNDS.maxBytes} bytes`);
  }
  const names150 = Array.from({ length: 150 }, (_, i) => `r${i}`);
  const required = {
    type: 'object',
    properties: props(
      150,
      (i) => names150[i],
      () => ({ type: 'string' }),
    ),
    required: names150,
  };
  const tooMany = await normalise(required, 'portable');
  t.equal(!tooMany.ok && tooMany.code, 'too_many_properties', 'more required properties than the bound: refused, not cut');
  const huge = {
    type: 'object',
    properties: props(
      100,
      (i) => `${String(i).padStart(3, '0')}${'n'.repeat(700)}`,
      () => ({ type: 'string' }),
    ),
  };
  const big = await normalise({ ...huge, required: Object.keys(huge.properties) }, 'openai');
  t.equal(!big.ok && big.code, 'too_large', 'names that cannot be cut keep it over 64 KiB: refused');
  let fan: S = { type: 'string' };
  const defs: S = {};
  for (let i = 30; i >= 0; i--) {
    defs[`d${i}`] = i === 30 ? fan : { type: 'object', properties: { l: { $ref: `#/$defs/d${i + 1}` }, r: { $ref: `#/$defs/d${i + 1}` } } };
  }
  fan = { type: 'object', properties: { root: { $ref: '#/$defs/d0' } }, $defs: defs };
  for (const p of PROFILES) await checked(t, fan, p, '$ref fan-out of 2^30 paths');
  const noisy = {
    type: 'object',
    properties: props(
      100,
      (i) => `${'[k]'.repeat(30_000)}${i}`,
      () => ({ type: 'string', 'x-a': 1, minLength: -1 }),
    ),
  };
  for (const p of PROFILES) {
    const r = await normalise(noisy, p);
    const bounded = r.ok ? r.notes.length <= 61 && r.notes.every((n) => n.length < 1_000) : r.reason.length < 1_000;
    t.ok(bounded, `${p}: notes (or the refusal) stay bounded for server text of any size`);
  }
});

t.test('5,000 tools normalise, each accepted or refused with a reason, each output passing the portable rules', async (t) => {
  const base = [...EVERYTHING_DUMP.map((x) => x.inputSchema), ...CONFORMANCE.slice(0, 2).map((x) => x.inputSchema), ...Object.values(HARD)];
  const schemas = Array.from({ length: 5_000 }, (_, i) => {
    const s = structuredClone(base[i % base.length]) as S;
    if (!s || typeof s !== 'object' || Array.isArray(s)) return s;
    return { ...s, description: `tool ${i}`, properties: { ...(s.properties ?? {}), [`extra_${i}`]: { type: 'integer' } } };
  });
  const results = await normaliseAll(schemas, 'portable');
  t.equal(results.length, 5_000);
  let accepted = 0;
  const bad: string[] = [];
  results.forEach((r, i) => {
    if (!r.ok) {
      if (!REFUSALS.has(r.code)) bad.push(`${i}: ${r.code}`);
      return;
    }
    accepted++;
    const v = checkPortable(r.schema);
    if (v.length) bad.push(`${i}: ${v[0]}`);
    let extra = false;
    visit(r.schema, (n) => {
      if (n.properties && Object.hasOwn(n.properties as object, `extra_${i}`)) extra = true;
    });
    if (!extra) bad.push(`${i}: its own property is missing`);
  });
  t.same(bad, [], 'every output passes; every refusal has a known code');
  t.ok(accepted > 4_000, `${accepted} accepted`);
});
