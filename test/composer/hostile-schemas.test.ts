// The argument check against schemas a hostile server writes (issue 26,
// item 5). The check runs on the daemon's own thread, so whatever a schema
// is, it ends quickly and never throws: an `$async` schema (whose validator
// rejects a promise nobody awaits) is left unchecked; a `$ref` graph that
// branches exponentially, or a recursion that branches at every level of
// the arguments, is given up on (out of steps); a pattern that backtracks
// polynomially is never run; arguments whose check would cost their size
// times the schema's (an enum's entries, `uniqueItems`' pairs) and schemas
// too big to compile at once are left unchecked. What is not hostile is
// still checked: a recursive schema on ordinary arguments, and patterns with
// one unbounded repeat or with repeats that cannot share characters.
import t from 'tap';
import { MAX_PATTERN_INPUT, MAX_PATTERN_TEXT, argumentProblems, riskyPattern } from '../../services/composer/check-args.ts';

/** `d0` … `dN`, each anyOf two references to the next. */
function branching(n: number): Record<string, unknown> {
  const definitions: Record<string, unknown> = { [`d${n}`]: { type: 'string' } };
  for (let i = 0; i < n; i++) definitions[`d${i}`] = { anyOf: [{ $ref: `#/definitions/d${i + 1}` }, { $ref: `#/definitions/d${i + 1}` }] };
  return { type: 'object', definitions, properties: { x: { $ref: '#/definitions/d0' } } };
}

const nested = (levels: number, leaf: Record<string, unknown>): Record<string, unknown> => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { c: v };
  return v;
};

t.test('an $async schema is left unchecked, and no promise rejects unhandled', async (t) => {
  let unhandled: unknown;
  const onUnhandled = (reason: unknown): void => {
    unhandled = reason;
  };
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => {
    process.off('unhandledRejection', onUnhandled);
  });
  t.same(argumentProblems({ $async: true, type: 'object', required: ['x'] }, {}), []);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(unhandled, undefined);
});

t.test('a $ref graph that branches exponentially is given up on; a small one is checked', async (t) => {
  t.same(argumentProblems(branching(40), { x: 1 }), [], '2^40 ways: unchecked, the call goes through');
  t.same(argumentProblems(branching(40), { x: 'ok' }), [], 'valid arguments take the first way');
  t.match(argumentProblems(branching(3), { x: 1 }), [{ argument: 'x', keyword: 'type' }], '2^3 ways: checked');
});

t.test('a recursion through the arguments: branching at every level is given up on when deep, checked when not', async (t) => {
  const node = {
    type: 'object',
    required: ['leaf'],
    properties: { c: { anyOf: [{ $ref: '#/definitions/n' }, { $ref: '#/definitions/n' }] } },
  };
  const schema = { $ref: '#/definitions/n', definitions: { n: node } };
  t.same(argumentProblems(schema, nested(40, { leaf: 1 })), [], '40 levels, two ways each: unchecked');
  t.match(argumentProblems(schema, nested(2, {})), [{ keyword: 'required' }], 'two levels: checked');
  // An ordinary recursive schema (a tree) is checked however deep the arguments are.
  const tree = {
    $ref: '#/definitions/t',
    definitions: {
      t: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string' }, kids: { type: 'array', items: { $ref: '#/definitions/t' } } },
      },
    },
  };
  let deep: Record<string, unknown> = { name: 'leaf', kids: [{ name: 7 }] };
  for (let i = 0; i < 100; i++) deep = { name: `n${i}`, kids: [deep] };
  const problems = argumentProblems(tree, deep);
  t.equal(problems.length, 1);
  t.match(problems[0], { keyword: 'type' });
  t.equal(problems[0]!.path.length, 203, 'the one wrong name, 101 levels down');
});

t.test('patterns that backtrack polynomially are risky; the usual ones are not', async (t) => {
  const risky = [
    '^a*a*a*a*a*a*$',
    '^(a?){25}a{25}$',
    '\\w{0,100}\\w{0,100}!',
    `${'a?'.repeat(16)}a*`,
    '.*.*=.*',
    '\\d+\\w+$',
    '^\\S+@\\S+\\.\\S+$',
    '\\p{L}+x+',
    '(?<n>a+)+',
    '(\\w+\\s?){3}',
    'x'.repeat(5_000),
  ];
  for (const p of risky) t.ok(riskyPattern(p), p.slice(0, 40));
  const plain = [
    '^[^@]+@[^@]+$',
    '^\\d+\\s+\\d+$',
    '^[A-Za-z0-9_-]{1,64}$',
    '^sk-[A-Za-z0-9]{20,}$',
    '^[a-z]+-[0-9]+$',
    '^(\\d{1,3}\\.){3}\\d{1,3}$',
    '^#[0-9a-fA-F]{6}$',
    '^[a-zA-Z_][a-zA-Z0-9_]*$',
  ];
  for (const p of plain) t.notOk(riskyPattern(p), p);
  const mail = { type: 'object', properties: { to: { type: 'string', pattern: '^[^@]+@[^@]+$' } } };
  t.match(argumentProblems(mail, { to: 'nobody' }), [{ argument: 'to', keyword: 'pattern' }], 'a plain pattern is checked');
  const slow = { type: 'object', properties: { s: { type: 'string', pattern: '^a*a*a*a*a*a*$' } }, required: ['s'] };
  t.same(argumentProblems(slow, { s: `${'a'.repeat(200)}b` }), [], 'a risky pattern: the schema is not checked, so nothing is refused');
});

t.test('patterns run on bounded text', async (t) => {
  const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^[a-z]+$' } } };
  t.match(argumentProblems(schema, { s: 'A' }), [{ keyword: 'pattern' }]);
  t.same(argumentProblems(schema, { s: 'A'.repeat(MAX_PATTERN_INPUT + 1) }), [], 'a longer string passes every pattern');
  const list = { type: 'object', properties: { l: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' } } } };
  const many = Array.from({ length: Math.ceil(MAX_PATTERN_TEXT / MAX_PATTERN_INPUT) + 1 }, () => 'a'.repeat(MAX_PATTERN_INPUT));
  t.same(argumentProblems(list, { l: [...many, 'A'] }), [], 'past the text a check may test, patterns pass');
  t.match(
    argumentProblems(list, { l: ['a', 'A'] }),
    [{ argument: 'l[1]' }],
    "and the budget is the check's own: the next one starts afresh",
  );
});

t.test('arguments too big for the schema go unchecked: the check would cost their size times its', async (t) => {
  const unique = { type: 'object', properties: { l: { type: 'array', uniqueItems: true } } };
  t.match(argumentProblems(unique, { l: [{ a: 1 }, { a: 2 }, { a: 1 }] }), [{ keyword: 'uniqueItems' }], 'a few items: checked');
  const many = Array.from({ length: 20_000 }, (_, i) => ({ a: i }));
  many.push({ a: 0 });
  t.same(argumentProblems(unique, { l: many }), [], 'twenty thousand: every pair would be compared, so not checked');
  const values = Array.from({ length: 8_000 }, (_, i) => `v${i}`);
  const listed = { type: 'object', properties: { l: { type: 'array', items: { enum: values } } } };
  t.match(
    argumentProblems(listed, { l: ['v1', 'nope'] }),
    [{ argument: 'l[1]', keyword: 'enum' }],
    'a short list against a long enum: checked',
  );
  t.same(argumentProblems(listed, { l: Array.from({ length: 20_000 }, () => 'nope') }), [], 'a long one: not checked');
  t.same(argumentProblems(listed, { l: new Array(300_000).fill(0) }), [], 'three hundred thousand items are counted without a throw');
});

t.test('a schema over 128 KiB is not checked (compiling it would hold up the daemon)', async (t) => {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 4_000; i++) properties[`p${i}`] = { type: 'string', minLength: 1 };
  t.ok(JSON.stringify(properties).length > 128 * 1024);
  t.same(argumentProblems({ type: 'object', properties, required: ['p0'] }, {}), []);
});
