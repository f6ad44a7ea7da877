// Property tests of the schema normaliser (fast-check): on any JSON value, on
// any JS value, and on generated schema-like trees full of $refs, combinators,
// type arrays and keywords, it never throws or rejects, each accepted output
// passes its profile's checker, each refusal carries a known code, and the
// same input gives the same output. Renamed property names come back through
// restoreArguments.
import t from 'tap';
import fc from 'fast-check';
import { normalise, restoreArguments, PROFILES, type Profile } from '../../services/catalogue/schema/normalise.ts';
import { CHECKERS } from './provider-rules.ts';

/** ALBEDO_FUZZ_RUNS multiplies the runs (for a long local soak); the default keeps the suite quick. */
const SCALE = Math.max(1, Number(process.env.ALBEDO_FUZZ_RUNS) || 1);
const runs = (n: number): number => n * SCALE;

const REFUSALS = new Set([
  'not_object',
  'accepts_nothing',
  'root_not_object',
  'too_many_properties',
  'required_unsupported',
  'strict_unsupported',
  'too_large',
]);

/** The property every run must hold; returns a failure description or '' (fast-check reports the counterexample). */
async function holds(schema: unknown, profile: Profile): Promise<string> {
  let first;
  try {
    first = await normalise(schema, profile);
  } catch (err) {
    return `threw ${String(err)}`;
  }
  if (!first.ok) return REFUSALS.has(first.code) ? '' : `refused with ${first.code}: ${first.reason}`;
  const v = CHECKERS[profile](first.schema);
  if (v.length) return `breaks the ${profile} rules: ${v.slice(0, 3).join('; ')}`;
  const again = await normalise(schema, profile);
  return JSON.stringify(again) === JSON.stringify(first) ? '' : 'not deterministic';
}

const keyword = fc.constantFrom('string', 'number', 'integer', 'boolean', 'object', 'array', 'null', 'any');
const name = fc.oneof(
  fc.constantFrom('a', 'b', 'id', 'filter[id]', 'x-y', '', '__proto__', 'constructor', 'a/b', 'é'),
  fc.string({ maxLength: 8 }),
);
const refTarget = fc.constantFrom(
  '#',
  '#/$defs/a',
  '#/$defs/b',
  '#/definitions/c',
  '#/$defs/missing',
  '#/properties/p',
  'http://127.0.0.1:9/x.json',
  'file:///etc/passwd',
  'other.json#/x',
  '#anchor',
  '#/$defs/a%20b',
  '#/$defs/a~1b',
);

/** Schema-like trees: most keywords, refs into $defs, booleans, nonsense values. */
const schemaTree = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.boolean(),
    fc.record({ type: fc.oneof(keyword, fc.array(keyword, { maxLength: 3 })) }, { requiredKeys: [] }),
    fc.record({ $ref: refTarget, description: fc.string({ maxLength: 20 }) }, { requiredKeys: ['$ref'] }),
    fc.record(
      {
        type: fc.oneof(keyword, fc.array(keyword, { maxLength: 3 })),
        properties: fc.dictionary(name, tie('node'), { maxKeys: 4 }),
        required: fc.array(name, { maxLength: 3 }),
        additionalProperties: fc.oneof(fc.boolean(), tie('node')),
        patternProperties: fc.dictionary(fc.constantFrom('^x', '[', '.*'), tie('node'), { maxKeys: 2 }),
        items: fc.oneof(tie('node'), fc.array(tie('node'), { maxLength: 2 })),
        prefixItems: fc.array(tie('node'), { maxLength: 2 }),
        anyOf: fc.array(tie('node'), { maxLength: 3 }),
        oneOf: fc.array(tie('node'), { maxLength: 3 }),
        allOf: fc.array(tie('node'), { maxLength: 2 }),
        not: tie('node'),
        if: tie('node'),
        then: tie('node'),
        enum: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 4 }),
        const: fc.jsonValue({ maxDepth: 1 }),
        format: fc.constantFrom('date-time', 'email', 'int64', 'float', 'uri', 'enum'),
        pattern: fc.constantFrom('^a+$', '(', '\\d{3}'),
        minLength: fc.oneof(fc.nat(5), fc.constant(-1), fc.constant('3')),
        minimum: fc.oneof(fc.integer(), fc.constant(true)),
        exclusiveMinimum: fc.oneof(fc.boolean(), fc.integer()),
        nullable: fc.boolean(),
        description: fc.oneof(fc.string({ maxLength: 30 }), fc.constant(7)),
        default: fc.jsonValue({ maxDepth: 1 }),
        dependencies: fc.dictionary(name, fc.oneof(fc.array(name, { maxLength: 2 }), tie('node')), { maxKeys: 2 }),
        'x-ext': fc.string({ maxLength: 5 }),
      },
      { requiredKeys: [] },
    ),
  ),
}));
const rootSchema = fc.record(
  {
    type: fc.constantFrom('object', ['object', 'null'], undefined, 'string'),
    properties: fc.dictionary(name, schemaTree.node, { maxKeys: 5 }),
    required: fc.array(name, { maxLength: 3 }),
    $defs: fc.record({ a: schemaTree.node, b: schemaTree.node, 'a b': schemaTree.node, 'a/b': schemaTree.node }, { requiredKeys: [] }),
    definitions: fc.record({ c: schemaTree.node }, { requiredKeys: [] }),
    anyOf: fc.array(schemaTree.node, { maxLength: 2 }),
    oneOf: fc.array(schemaTree.node, { maxLength: 2 }),
    allOf: fc.array(schemaTree.node, { maxLength: 2 }),
    if: schemaTree.node,
  },
  { requiredKeys: ['properties'] },
);

t.test('any JSON value, any profile: never throws, passes the checker or is refused with a code, deterministic', async (t) => {
  for (const p of PROFILES) {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (v) => (await holds(v, p)) === ''),
      { numRuns: runs(150) },
    );
    t.pass(`${p}: held for random JSON`);
  }
});

t.test('any JS value (undefined, NaN, symbols, class instances, __proto__ keys): never throws', async (t) => {
  const anything = fc.anything({
    withBigInt: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withTypedArray: true,
    withNullPrototype: true,
    withObjectString: true,
  });
  await fc.assert(
    fc.asyncProperty(
      anything,
      async (v) => (await holds(v, 'portable')) === '' && (await holds({ type: 'object', properties: { p: v } }, 'anthropic')) === '',
    ),
    { numRuns: runs(200) },
  );
  t.pass('held');
});

t.test('schema-like trees with $refs, cycles, combinators and bad values: every profile holds', async (t) => {
  for (const p of PROFILES) {
    await fc.assert(
      fc.asyncProperty(rootSchema, async (s) => {
        const why = await holds(s, p);
        if (why) throw new Error(why);
        return true;
      }),
      { numRuns: runs(250) },
    );
    t.pass(`${p}: held for generated schemas`);
  }
});

t.test("random Unicode property names: every kept name passes the profile's rule, and the server's names come back", async (t) => {
  for (const p of ['anthropic', 'gemini', 'portable', 'bedrock'] as const) {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.string({ unit: 'grapheme', maxLength: 80 }), { minLength: 1, maxLength: 12 }), async (names) => {
        const schema = { type: 'object', properties: Object.fromEntries(names.map((n) => [n, { type: 'string' }])) };
        const r = await normalise(schema, p);
        if (!r.ok) throw new Error(`refused: ${r.code}`);
        const v = CHECKERS[p](r.schema);
        if (v.length) throw new Error(v.join('; '));
        const shown = Object.keys(r.schema.properties as object);
        const back = restoreArguments(Object.fromEntries(shown.map((n) => [n, n])), r.args) as Record<string, string>;
        if (JSON.stringify(Object.keys(back).sort()) !== JSON.stringify([...names].sort()))
          throw new Error(`names back: ${JSON.stringify(Object.keys(back))}`);
        return shown.length === names.length;
      }),
      { numRuns: runs(150) },
    );
    t.pass(`${p}: names renamed and restored`);
  }
});
