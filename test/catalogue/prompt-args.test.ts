// get_prompt's arguments in every provider profile: the arguments the
// server's prompts declare become named properties the profile accepts (a
// free-form map is dropped by portable/gemini and refused by openai-strict),
// each mapped back to the server's name through the route's ArgPlan, and a
// call made as the model would make it reaches the real server's prompts/get
// with the arguments applied. Hostile names (collisions after sanitising,
// `__proto__`, Unicode, 2,000 characters, 10,000 of them) stay bounded.
import t, { type Test } from 'tap';
import { createRequire } from 'node:module';
import { albedoFor, newTag, server, EVERYTHING, rejection } from '../helpers.ts';
import { catalogueDefinitions, definitionSchemas, type Definitions, type ServerCatalogue } from '../../services/catalogue/definitions.ts';
import { MAX_PROMPT_ARGS, composePlans } from '../../services/catalogue/prompt-args.ts';
import { prepareNormaliser } from '../../services/catalogue/schema-cache.ts';
import { normalise, restoreArguments, PROFILES } from '../../services/catalogue/schema/normalise.ts';
import { callArguments, operationFor } from '../../services/composer/routing.ts';
import type { ArgPlan, ModelTool, RouteEntry } from '../../protocol/catalogue.ts';
import type { Catalogue, Prompt } from '../../protocol/mcp.ts';
import type { Connection } from '../../api/connection.ts';
import { CHECKERS } from './provider-rules.ts';
import { HOSTILE } from '../fixtures/prompt-args-server.ts';

type S = Record<string, any>;
type Ajv = { compile(s: unknown): ((v: unknown) => boolean) & { errors?: unknown } };
const ajv = new (createRequire(import.meta.url)('ajv/dist/2020') as new (o: object) => Ajv)({ strict: false, validateFormats: false });
const KEY = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;
const FIXTURE = new URL('../fixtures/prompt-args-server.ts', import.meta.url).pathname;
const define = (o: S, k: string, v: unknown): void => {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
};

const tag = newTag();
const albedo = await albedoFor(t, tag);
const conns: Record<string, Connection> = {
  everything: await albedo.connect(server(tag, EVERYTHING, ['stdio']), { name: 'everything' }),
  hostile: await albedo.connect(server(tag, FIXTURE), { name: 'hostile' }),
  many: await albedo.connect(server(tag, FIXTURE, ['--filler', '10000']), { name: 'many' }),
};
const entryOf = (s: string): ServerCatalogue => ({ server: s, catalogue: structuredClone(conns[s]!.catalogue) });

async function defsFor(entries: ServerCatalogue[], profile: string): Promise<Definitions> {
  const lookup = await prepareNormaliser((s, p) => normalise(s, p as never), definitionSchemas(entries), profile);
  return catalogueDefinitions(entries, { normalise: lookup, profile });
}

/** The server's get_prompt definition and route under `profile`; fails the test when it is not advertised. */
async function getPrompt(
  t: Test,
  entry: ServerCatalogue,
  profile: string,
): Promise<{ tool: ModelTool; route: RouteEntry; d: Definitions }> {
  const d = await defsFor([entry], profile);
  const tool = d.tools.find((x) => d.routes.get(x.name)!.kind === 'get_prompt');
  if (!tool) throw new Error(`${profile}: get_prompt is not advertised: ${d.warnings.join('; ')}`);
  t.same(CHECKERS[profile]!(tool.inputSchema), [], `${profile}: get_prompt passes the ${profile} rules`);
  return { tool, route: d.routes.get(tool.name)!, d };
}

/** Server argument name → the property under `arguments` the model gives it as, read back through the route's plan. */
function offered(tool: ModelTool, route: RouteEntry): Map<string, string> {
  const props: S = (tool.inputSchema.properties as S).arguments?.properties ?? {};
  const out = new Map<string, string>();
  for (const key of Object.keys(props)) {
    const back = restoreArguments({ arguments: { [key]: 'v' } }, route.args) as S;
    const names = Object.keys(back.arguments);
    if (names.length !== 1 || out.has(names[0]!)) throw new Error(`property ${key} does not map to exactly one new server name`);
    out.set(names[0]!, key);
  }
  return out;
}

/**
 * What a model following the schema sends for `prompt` with `given` (server
 * names → values): each under the property offered for it, in strict mode
 * every other property null; checked against the schema, then as JSON text.
 */
function modelCall(t: Test, tool: ModelTool, route: RouteEntry, prompt: string, given: Array<[string, string]>, extra: S = {}): string {
  const map = offered(tool, route);
  const args: S = {};
  for (const [n, v] of given) {
    const key = map.get(n);
    if (key === undefined) throw new Error(`no property is offered for ${JSON.stringify(n.slice(0, 40))}`);
    define(args, key, v);
  }
  for (const [k, v] of Object.entries(extra)) define(args, k, v);
  const argSchema = (tool.inputSchema.properties as S).arguments;
  if (argSchema.additionalProperties === false) for (const k of argSchema.required) if (!Object.hasOwn(args, k)) define(args, k, null);
  const call = { name: prompt, arguments: args };
  const valid = ajv.compile(tool.inputSchema);
  // Null-prototype copies: ajv reads a property as `data[key]`, which would find Object.prototype's `constructor`.
  const bare = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.entries(v).reduce(
          (o, [k, x]) => {
            define(o, k, bare(x));
            return o;
          },
          Object.create(null) as S,
        )
      : v;
  t.ok(valid(bare(call)), `the model's call is valid under the schema ${JSON.stringify(valid.errors ?? '').slice(0, 300)}`);
  return JSON.stringify(call);
}

/** The call as the session makes it (session.ts `call`): parsed JSON, the route's plan restored, then the MCP operation. */
function opFor(route: RouteEntry, json: string): { method: 'prompts/get'; name: string; arguments: Record<string, string> } {
  const op = operationFor(route, restoreArguments(callArguments(JSON.parse(json)), route.args) as S);
  if (op.method !== 'prompts/get') throw new Error(`routed to ${op.method}`);
  return op as { method: 'prompts/get'; name: string; arguments: Record<string, string> };
}

const textOf = (r: { messages: Array<{ content: unknown }> }): string =>
  r.messages.map((m) => (m.content as { text?: string }).text ?? '').join('\n');
const declaredNames = (prompts: Prompt[]): Set<string> =>
  new Set(prompts.flatMap((p) => (p.arguments ?? []).map((a) => a.name)).filter((n) => n));

t.test(
  "every profile: server-everything's get_prompt passes the profile's rules and offers each argument its prompts declare",
  async (t) => {
    const declared = declaredNames(conns.everything!.catalogue.prompts);
    t.ok(declared.has('city') && declared.size >= 4, 'server-everything has prompts with arguments');
    for (const profile of PROFILES) {
      const { tool, route } = await getPrompt(t, entryOf('everything'), profile);
      const map = offered(tool, route);
      t.same([...map.keys()].sort(), [...declared].sort(), `${profile}: every declared argument is offered, under one property each`);
      const props = (tool.inputSchema.properties as S).arguments.properties as S;
      for (const key of map.values()) t.match(props[key], { type: profile === 'openai-strict' ? ['string', 'null'] : 'string' });
      t.match(props[map.get('city')!].description, /args-prompt/, `${profile}: a property says which prompt takes it`);
    }
  },
);

t.test(
  "every profile: a call made as the model would make it reaches server-everything's prompts/get with the arguments applied",
  async (t) => {
    const cases: Array<[string, Array<[string, string]>, string[]]> = [
      [
        'args-prompt',
        [
          ['city', 'Tromsø'],
          ['state', 'Troms'],
        ],
        ['Tromsø', 'Troms'],
      ],
      ['args-prompt', [['city', 'Bergen']], ['Bergen']],
      [
        'completable-prompt',
        [
          ['department', 'Engineering'],
          ['name', 'Alice'],
        ],
        ['Alice', 'Engineering'],
      ],
    ];
    for (const profile of PROFILES) {
      const { tool, route } = await getPrompt(t, entryOf('everything'), profile);
      for (const [prompt, given, expected] of cases) {
        const op = opFor(route, modelCall(t, tool, route, prompt, given));
        t.same(
          op,
          { method: 'prompts/get', name: prompt, arguments: Object.fromEntries(given) },
          `${profile}: server names, strings only, nulls dropped`,
        );
        const text = textOf(await conns.everything!.getPrompt(op.name, op.arguments));
        for (const e of expected) t.ok(text.includes(e), `${profile}: ${prompt} came back with ${e} applied`);
      }
    }
  },
);

t.test('hostile argument names: valid and bounded in every profile, each mapped back to its own server name, end to end', async (t) => {
  const names = HOSTILE.filter((n) => n);
  const keysByProfile: string[][] = [];
  for (const profile of PROFILES) {
    const { tool, route } = await getPrompt(t, entryOf('hostile'), profile);
    const map = offered(tool, route);
    t.same([...map.keys()].sort(), [...names].sort(), `${profile}: each declared name is offered once, the empty one not at all`);
    t.equal(new Set(map.values()).size, names.length, `${profile}: names that collide after sanitising get distinct properties`);
    for (const key of map.values()) if (!KEY.test(key)) t.fail(`${profile}: property ${JSON.stringify(key)} breaks the strictest key rule`);
    const props = (tool.inputSchema.properties as S).arguments.properties as S;
    const [long1, long2] = [map.get(names.at(-2)!)!, map.get(names.at(-1)!)!];
    t.not(props[long1].description, props[long2].description, `${profile}: 2,000-character names that differ at the end are told apart`);
    keysByProfile.push([...map.values()]);
    // Every hostile name at once, each with its own value: exactly these reach the server, under the server's names.
    const given = names.map((n, i): [string, string] => [n, `v${i}`]);
    const op = opFor(route, modelCall(t, tool, route, 'echo', given));
    t.same(
      Object.entries(op.arguments).sort(),
      [...given].sort(),
      `${profile}: the operation carries the server's names (own keys, __proto__ included)`,
    );
    const own = Object.hasOwn(op.arguments, '__proto__') && Object.getPrototypeOf(op.arguments) === Object.prototype;
    t.ok(own, `${profile}: __proto__ is data, not a prototype`);
    const echoed = JSON.parse(textOf(await conns.hostile!.getPrompt(op.name, op.arguments))) as Array<[string, string]>;
    t.same(echoed.sort(), [...given].sort(), `${profile}: the server received exactly those arguments`);
    // Two of them (one renamed, one kept): only those reach the server (in strict mode the model's nulls for the rest are dropped).
    const few: Array<[string, string]> = [
      ['a.b', 'dot'],
      ['a_b', 'underscore'],
    ];
    const fewOp = opFor(route, modelCall(t, tool, route, 'other', few));
    t.same(Object.entries(fewOp.arguments), few, `${profile}: exactly the arguments given, under the server's names`);
  }
  for (const keys of keysByProfile) t.same(keys, keysByProfile[0], 'the same properties in every profile');
  const again = await defsFor([entryOf('hostile')], 'portable');
  const first = await defsFor([entryOf('hostile')], 'portable');
  t.same(again.tools, first.tools, 'the same definitions from a fresh copy of the catalogue');
  t.same([...again.routes], [...first.routes], 'and the same routes and plans');
});

t.test(
  '10,000 declared arguments: at most MAX_PROMPT_ARGS offered, the required first, the cut said; extra properties where kept',
  async (t) => {
    const names = HOSTILE.filter((n) => n);
    const cut = names.length + 10_000 - MAX_PROMPT_ARGS;
    for (const profile of PROFILES) {
      const { tool, route } = await getPrompt(t, entryOf('many'), profile);
      const map = offered(tool, route);
      const fillers = Array.from({ length: MAX_PROMPT_ARGS - names.length }, (_, k) => `f${k}`);
      t.same(
        [...map.keys()],
        [...names, ...fillers],
        `${profile}: the ${MAX_PROMPT_ARGS} offered are the required ones, then the first declared`,
      );
      const argSchema = (tool.inputSchema.properties as S).arguments;
      t.ok(argSchema.description.includes(String(cut)), `${profile}: the description says how many are not listed`);
      const rich = profile === 'openai' || profile === 'anthropic' || profile === 'bedrock';
      t.equal(
        argSchema.additionalProperties?.type === 'string',
        rich,
        `${profile}: extra string properties allowed exactly where the profile keeps them`,
      );
      if (!rich) continue;
      const op = opFor(route, modelCall(t, tool, route, 'echo', [['a-b', 'x']], { f9999: 'last' }));
      const echoed = JSON.parse(textOf(await conns.many!.getPrompt(op.name, op.arguments))) as Array<[string, string]>;
      t.same(
        echoed.sort(),
        [
          ['a-b', 'x'],
          ['f9999', 'last'],
        ],
        `${profile}: an unlisted argument given by its exact name reaches the server`,
      );
    }
  },
);

t.test('10,000 arguments with 2,000-character and non-Latin names: bounded, distinct, mapped back, deterministic', async (t) => {
  const long = (i: number): string => `${'ä'.repeat(1_990)}${String(i).padStart(10, '0')}`;
  const prompts: Prompt[] = [
    {
      name: 'p',
      arguments: Array.from({ length: 10_000 }, (_, i) => ({
        name: i % 2 ? long(i) : `名前${i}`,
        description: 'd'.repeat(5_000),
        required: i < 70,
      })),
    },
  ];
  const catalogue: Catalogue = { tools: [], resources: [], resourceTemplates: [], prompts };
  const chosen = Array.from({ length: MAX_PROMPT_ARGS }, (_, i) => (i % 2 ? long(i) : `名前${i}`));
  for (const profile of PROFILES) {
    const { tool, route } = await getPrompt(t, { server: 'big', catalogue: structuredClone(catalogue) }, profile);
    const map = offered(tool, route);
    t.same([...map.keys()], chosen, `${profile}: the first ${MAX_PROMPT_ARGS} required ones, each mapped back to its own name`);
    for (const key of map.values()) if (!KEY.test(key)) t.fail(`${profile}: property ${JSON.stringify(key)} breaks the strictest key rule`);
    const required = (tool.inputSchema.properties as S).arguments.required as string[];
    t.same(required, [...map.values()], `${profile}: the one prompt requires them all, so they are required`);
    t.same((tool.inputSchema as S).required, ['name', 'arguments'], `${profile}: and so is arguments`);
    const again = await getPrompt(t, { server: 'big', catalogue: structuredClone(catalogue) }, profile);
    t.same(again.tool, tool, `${profile}: the same definition on another build`);
    t.same(again.route, route, `${profile}: and the same plan`);
  }
});

t.test('openai-strict: nulls for the properties a prompt does not take are dropped; bad input is refused as not run', async (t) => {
  const { tool, route } = await getPrompt(t, entryOf('everything'), 'openai-strict');
  const json = modelCall(t, tool, route, 'args-prompt', [['city', 'Oslo']]);
  t.ok(Object.values(JSON.parse(json).arguments).includes(null), 'the model gave nulls for the others');
  t.same(opFor(route, json).arguments, { city: 'Oslo' });
  t.same(opFor(route, JSON.stringify({ name: 'simple-prompt', arguments: null })), {
    method: 'prompts/get',
    name: 'simple-prompt',
    arguments: {},
  });
  const city = offered(tool, route).get('city')!;
  for (const bad of [
    { name: 'args-prompt', arguments: { [city]: 7 } },
    { name: 'args-prompt', arguments: { [city]: ['Oslo'] } },
    { name: 'args-prompt', arguments: 'city=Oslo' },
    { name: 'args-prompt', arguments: [] },
    { arguments: { [city]: 'Oslo' } },
    { name: '', arguments: {} },
    { name: null, arguments: {} },
  ]) {
    t.match(await rejection((async () => opFor(route, JSON.stringify(bad)))()), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });
  }
  const openai = await getPrompt(t, entryOf('everything'), 'openai');
  const c = offered(openai.tool, openai.route).get('city')!;
  const nulled = (async () => opFor(openai.route, JSON.stringify({ name: 'args-prompt', arguments: { [c]: null } })))();
  t.match(await rejection(nulled), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' }, 'outside strict mode a null is not a string');
});

t.test("composePlans: one plan then the other, as one (the normaliser's over ours)", async (t) => {
  const outer: ArgPlan = {
    props: {
      x: { from: 'y', dropNull: true },
      arguments: { dropNull: true, plan: { props: { k: { dropNull: true }, m: { from: 'n' } } } },
    },
  };
  const inner: ArgPlan = {
    props: { y: { from: 'server-y' }, arguments: { plan: { props: { k: { from: 'K!' }, j: { from: 'J!' }, n: { from: 'N!' } } } } },
  };
  const inputs: unknown[] = [
    { x: 1, arguments: { k: 'a', j: 'b', m: 'c', z: 'd' } },
    { x: null, arguments: { k: null, j: null } },
    { arguments: null },
    { y: 2, arguments: 'raw' },
  ];
  const both = composePlans(outer, inner);
  for (const input of inputs)
    t.same(restoreArguments(input, both), restoreArguments(restoreArguments(input, outer), inner), JSON.stringify(input));
  t.equal(composePlans(undefined, inner), inner);
  t.equal(composePlans(outer, undefined), outer);
  t.equal(composePlans(undefined, { props: {} }), undefined);
});
