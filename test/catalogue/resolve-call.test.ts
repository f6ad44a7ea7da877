// Names a caller may use for a definition (issue 26, item 4): the advertised
// name, server/tool (server/read_resource and server/get_prompt too), a raw
// tool name one server has, the advertised name without its hash; a name
// several definitions fit is refused with the candidates, a miss suggests the
// nearest. And the argument check's pieces (item 5) that need no server:
// drafts, schemas it leaves unchecked, risky patterns, the sentences.
import t from 'tap';
import { catalogueDefinitions } from '../../services/catalogue/definitions.ts';
import { resolveCall, withoutHash } from '../../services/catalogue/resolve-call.ts';
import { distance, nearest, rank } from '../../services/catalogue/nearest.ts';
import { nameOf } from '../../services/catalogue/names.ts';
import { argumentProblems, riskyPattern } from '../../services/composer/check-args.ts';
import type { Normalise } from '../../protocol/catalogue.ts';
import type { Catalogue } from '../../protocol/mcp.ts';
import type { AlbedoError } from '../../protocol/errors.ts';

const trivial: Normalise = (schema) => ({ ok: true, schema: schema as Record<string, unknown>, notes: [] });
const obj = { type: 'object' };
const catalogue = (tools: string[], extra: Partial<Catalogue> = {}): Catalogue =>
  ({ tools: tools.map((name) => ({ name, inputSchema: obj })), resources: [], resourceTemplates: [], prompts: [], ...extra }) as Catalogue;

const withResources = { resources: [{ uri: 'x://a', name: 'a' }], prompts: [{ name: 'p' }] } as Partial<Catalogue>;
const d = catalogueDefinitions(
  [
    { server: 'everything', catalogue: catalogue(['echo', 'get-sum', 'get-env'], withResources) },
    { server: 'mirror', catalogue: catalogue(['echo', 'reverse']) },
    { server: 'docs', catalogue: catalogue(['search', 'read_resource'], withResources) },
  ],
  { normalise: trivial },
);
const servers = ['everything', 'mirror', 'docs'];
const resolve = (name: string) => resolveCall(d.routes, name, servers);
const miss = (name: string) => {
  try {
    resolve(name);
  } catch (err) {
    return err as AlbedoError & { data: Record<string, any> };
  }
  throw new Error(`${name} resolved`);
};
const tool = (server: string, name: string) => nameOf({ server, kind: 'tool', tool: name });

t.test('every unambiguous form reaches its definition', async (t) => {
  const sum = tool('everything', 'get-sum');
  t.same(resolve(sum), { name: sum, route: { server: 'everything', kind: 'tool', tool: 'get-sum' } }, 'the advertised name');
  t.equal(resolve('everything/get-sum').name, sum, 'server/tool');
  t.equal(resolve('get-sum').name, sum, 'a raw tool name only one server has');
  t.equal(resolve('mcp_everything_get_sum').name, sum, 'the advertised name without its hash');
  t.equal(withoutHash(sum), 'mcp_everything_get_sum');
  t.equal(resolve('reverse').route.server, 'mirror');
  t.same(
    resolve('everything/read_resource').route,
    { server: 'everything', kind: 'read_resource' },
    'server/read_resource: the pseudo-operation',
  );
  t.same(resolve('everything/get_prompt').route, { server: 'everything', kind: 'get_prompt' }, 'server/get_prompt');
  t.same(resolve('docs/read_resource').route, { server: 'docs', kind: 'tool', tool: 'read_resource' }, 'a tool of that name comes first');
  t.equal(resolve('mcp_everything_read_resource').route.kind, 'read_resource', 'a pseudo-operation without its hash');
});

t.test('a name several definitions fit is refused, listing them', async (t) => {
  const e = miss('echo');
  t.match(e, { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run', data: { name: 'echo', ambiguous: true } });
  t.same(e.data.candidates.sort(), [tool('everything', 'echo'), tool('mirror', 'echo')].sort());
  t.match(e.message, /more than one tool/);
  t.match(e.message, /everything\/echo/);
  t.match(e.message, /mirror\/echo/);
  // get_prompt: two servers have one, neither a tool of that name.
  t.match(miss('get_prompt').data, {
    ambiguous: true,
    candidates: [nameOf({ server: 'everything', kind: 'get_prompt' }), nameOf({ server: 'docs', kind: 'get_prompt' })],
  });
  t.equal(resolve('mirror/echo').route.server, 'mirror', 'server/tool settles it');
});

t.test('a miss suggests the nearest names, in the form the caller used', async (t) => {
  const cases: Array<[string, string]> = [
    ['ecoh', 'echo'],
    ['everything/ecoh', 'echo'],
    ['everythin/get-sum', 'get-sum'],
    ['get_sum', 'get-sum'],
    ['sum', 'get-sum'],
    [`${tool('everything', 'get-env').slice(0, -1)}x`, 'get-env'],
  ];
  for (const [typed, meant] of cases) {
    const e = miss(typed);
    t.equal(e.code, 'ALBEDO_NOT_FOUND', typed);
    t.ok(e.data.suggestions.length >= 1, `${typed}: suggestions`);
    t.equal(
      d.routes.get(e.data.suggestions[0])?.kind === 'tool' && (d.routes.get(e.data.suggestions[0]) as { tool: string }).tool,
      meant,
      `${typed} → ${meant}`,
    );
    t.match(e.message, /did you mean /, `${typed}: the message asks`);
  }
  t.same(miss('everything/ecoh').data.suggestions, [tool('everything', 'echo')], 'a near match is not followed by mere neighbours');
  const none = miss('completely-unrelated-name');
  t.same(none.data.suggestions, []);
  t.notMatch(none.message, /did you mean/);
  t.match(miss('everything/nope').data, { server: 'everything', tool: 'nope' }, 'the server named is still said');
});

t.test('the distance and the ranking', async (t) => {
  t.equal(distance('echo', 'echo'), 0);
  t.equal(distance('ecoh', 'echo'), 1, 'a swap is one edit');
  t.equal(distance('kitten', 'sitting'), 3);
  t.equal(distance('a', 'abcdefgh', 2), 3, 'past the limit: limit + 1');
  t.equal(rank('ECHO', 'echo'), 0, 'case is ignored');
  t.ok(rank('sum', 'get-sum') <= 0.3, 'a part of the name');
  t.same(
    nearest(['aaaa', 'echo', 'ecco'], (c) => rank('echo', c)),
    ['echo'],
    'an exact match alone',
  );
  const long = 'x'.repeat(10_000);
  t.ok(rank(long, `${long}y`) < 0.5, 'long names are cut before they are compared');
});

t.test('argument checks: drafts, sentences, and schemas left unchecked', async (t) => {
  const schema = {
    type: 'object',
    properties: {
      message: { type: 'string' },
      count: { type: 'integer' },
      opts: { type: 'object', properties: { mode: { enum: ['a', 'b'] } } },
      list: { type: 'array', items: { type: 'number' } },
    },
    required: ['message'],
    additionalProperties: false,
  };
  t.same(argumentProblems(schema, { message: 'x' }), []);
  t.match(argumentProblems(schema, {}), [
    { argument: 'message', pointer: '/message', keyword: 'required', message: 'message is required' },
  ]);
  t.match(argumentProblems(schema, { message: 'x', count: 1.5 }), [
    { argument: 'count', keyword: 'type', message: 'count must be an integer' },
  ]);
  t.match(argumentProblems(schema, { message: 'x', opts: { mode: 'c' } }), [
    { argument: 'opts.mode', pointer: '/opts/mode', keyword: 'enum' },
  ]);
  t.match(argumentProblems(schema, { message: 'x', list: [1, 'two'] }), [{ argument: 'list[1]', pointer: '/list/1', keyword: 'type' }]);
  t.match(argumentProblems(schema, { message: 'x', 'odd/key': 1 }), [
    { argument: '["odd/key"]', pointer: '/odd~1key', keyword: 'additionalProperties' },
  ]);
  t.equal(argumentProblems(schema, { count: 'x' }).length, 2, 'every problem');
  t.same(
    argumentProblems({ ...schema }, {}).map((p) => p.keyword),
    ['required'],
    'another object with the same content is compiled on its own',
  );

  const dependent = { type: 'object', properties: { a: {}, b: {} }, dependentRequired: { a: ['b'] } };
  t.same(argumentProblems(dependent, { a: 1 }), [], 'draft-07 (no $schema) has no dependentRequired');
  for (const draft of ['https://json-schema.org/draft/2020-12/schema', 'https://json-schema.org/draft/2019-09/schema']) {
    t.match(argumentProblems({ $schema: draft, ...dependent }, { a: 1 }), [{ argument: 'b', keyword: 'dependentRequired' }], draft);
  }
  t.match(argumentProblems({ $schema: 'http://json-schema.org/draft-06/schema#', ...schema }, {}), [{ keyword: 'required' }], 'draft-06');
  t.same(
    argumentProblems({ type: 'object', properties: { e: { type: 'string', format: 'email' } } }, { e: 'not mail' }),
    [],
    'formats are not enforced',
  );

  const unchecked: Array<[string, unknown]> = [
    ['draft-04', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object', required: ['n'] }],
    ['an unknown $schema', { $schema: 'https://example.com/my-dialect', type: 'object', required: ['n'] }],
    ['a remote $ref', { type: 'object', properties: { n: { $ref: 'https://example.com/n.json' } }, required: ['n'] }],
    ['a missing local $ref', { type: 'object', properties: { n: { $ref: '#/$defs/none' } }, required: ['n'] }],
    ['nonsense', { type: 'objekt', required: ['n'] }],
    ['a risky pattern', { type: 'object', properties: { s: { pattern: '^(a+)+$' } }, required: ['n'] }],
    ['a huge schema', { type: 'object', description: 'x'.repeat(600 * 1024), required: ['n'] }],
  ];
  for (const [what, s] of unchecked) t.same(argumentProblems(s, {}), [], `${what}: not checked, so not refused`);
  t.match(
    argumentProblems({ type: 'object', properties: { s: { pattern: '^[a-z]+$' } } }, { s: 'A1' }),
    [{ keyword: 'pattern' }],
    'a safe pattern is checked',
  );
});

t.test('risky patterns', async (t) => {
  for (const p of ['^(a+)+$', '(a*)*', '(a|aa)+', '(x+x+)+y', '(\\w+\\s?)*$', '(a{1,5}){2,}', '(.)\\1', '((ab)+)+'])
    t.ok(riskyPattern(p), p);
  for (const p of ['^[a-z]+$', '^\\d{4}-\\d{2}$', '^(foo|bar)$', '^(ab)+$', '[(a+)+]', '^(?:https?://)?[\\w.-]+$', '\\(a+\\)+'])
    t.notOk(riskyPattern(p), p);
});
