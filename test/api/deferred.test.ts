// Deferred tools (issue 13, item 1) through the embedding API over real
// servers (server-everything, server-filesystem, server-memory, the SDK
// fixture): a deferred session gives the model mcp_search_tools and
// mcp_call_tool (and the alwaysLoad tools); searches find tools and load
// them into a list that only grows; mcp_call_tool calls them with the same
// outcomes and error codes as a direct call; `auto` defers over its budget;
// the cost report adds up.
import t, { type Test } from 'tap';
import path from 'node:path';
import type { AlbedoSession } from '../../api/sessions.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, ROOT, albedoFor, fixture, newTag, rejection, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

const mod = (pkg: string): string => path.join(ROOT, 'node_modules', '@modelcontextprotocol', pkg, 'dist', 'index.js');
const names = (s: AlbedoSession): string[] => s.tools().map((x) => x.name);
const nameOf = (s: AlbedoSession, server: string, tool: string): string =>
  s.allTools().find((x) => x.description.startsWith(`[server ${JSON.stringify(server)}, tool ${JSON.stringify(tool)}]`))!.name;

async function setup(t: Test, extra: Record<string, unknown> = {}) {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({
    everything: h.stdio(EVERYTHING, ['stdio']),
    filesystem: { ...h.stdio(mod('server-filesystem'), [ROOT]), ...((extra.filesystem as object) ?? {}) },
    memory: { ...h.stdio(mod('server-memory')), ...((extra.memory as object) ?? {}) },
    sdk: h.stdio(fixture('sdk-server.ts')),
  });
  return albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
}

/** How a call ended: its result, or its error's code and outcome. */
const ending = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    (result) => ({ result }),
    (err: AlbedoError) => ({ code: err.code, outcome: err.outcome }),
  );

t.test('deferred: the fixed set, search loads, mcp_call_tool matches direct calls', async (t) => {
  const albedo = await setup(t);
  const s = await albedo.sessions.open({ tools: 'deferred' });
  t.same(names(s), ['mcp_search_tools', 'mcp_call_tool', 'mcp_read_result'], 'the model sees the three fixed tools only');
  t.same(s.loaded(), [], 'nothing loaded yet');
  t.match(s.toolsMode, { option: 'deferred', deferred: true });
  t.ok(s.allTools().length >= 40, `${s.allTools().length} definitions behind them`);

  // Search through the tool, as the model does.
  const found = (await s.call('mcp_search_tools', { query: 'read a text file' })) as {
    structuredContent: { tools: Array<{ name: string; inputSchema: unknown }> };
  };
  const readText = nameOf(s, 'filesystem', 'read_text_file');
  t.ok(
    found.structuredContent.tools.some((x) => x.name === readText),
    'the search found read_text_file',
  );
  const def = s.allTools().find((x) => x.name === readText)!;
  t.same(
    found.structuredContent.tools.find((x) => x.name === readText)!.inputSchema,
    def.inputSchema,
    'with the schema the session would advertise',
  );
  t.ok(s.loaded().includes(readText), 'and loaded it');
  const afterFirst = names(s);
  t.same(afterFirst.slice(0, 3), ['mcp_search_tools', 'mcp_call_tool', 'mcp_read_result']);
  t.ok(afterFirst.includes(readText), 'tools() now gives its definition');

  // The list only grows: a second search keeps the first one's tools, in order, in front.
  const echo = s.search('echo', 3);
  t.ok(echo.length >= 2 && echo.slice(0, 2).every((x) => /echo/.test(x.name)), 'exact name: both echo tools first');
  const afterSecond = names(s);
  t.same(afterSecond.slice(0, afterFirst.length), afterFirst, 'what the model had is a prefix of what it has now');
  t.same(
    s.search('read a text file').map((x) => x.name),
    found.structuredContent.tools.map((x) => x.name),
    'the same query, the same answer',
  );
  t.same(names(s), afterSecond, 'a search finding loaded tools adds nothing');

  // mcp_call_tool: the same outcomes as calling directly.
  const sdkEcho = nameOf(s, 'sdk', 'echo');
  t.same(
    await s.call('mcp_call_tool', { name: sdkEcho, arguments: { text: 'via call_tool' } }),
    await s.call(sdkEcho, { text: 'via call_tool' }),
  );
  t.equal(
    text(await s.call('mcp_call_tool', { name: 'sdk/add', arguments: { a: 2, b: 3 } })),
    text(await s.call('sdk/add', { a: 2, b: 3 })),
    'server/tool',
  );
  t.match(await s.call('mcp_call_tool', { name: 'sdk/fail' }), { isError: true }, 'isError is a result, as directly');
  const direct = await rejection(s.call('nope/nothing', {}));
  const via = await rejection(s.call('mcp_call_tool', { name: 'nope/nothing', arguments: {} }));
  t.match(via, { code: (direct as AlbedoError).code, outcome: (direct as AlbedoError).outcome }, 'an unknown name: the same error');
  const badDirect = await ending(s.call(sdkEcho, { text: 42 }));
  t.same(await ending(s.call('mcp_call_tool', { name: sdkEcho, arguments: { text: 42 } })), badDirect, 'bad arguments: the same ending');
  const everythingBad = await ending(s.call('everything/get-sum', { a: 'x' }));
  t.same(
    await ending(s.call('mcp_call_tool', { name: 'everything/get-sum', arguments: { a: 'x' } })),
    everythingBad,
    'and on server-everything',
  );
  t.match(await rejection(s.call('mcp_call_tool', { arguments: {} })), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' }, 'no name');
  t.match(await rejection(s.call('mcp_call_tool', { name: 'mcp_search_tools', arguments: { query: 'x' } })), {
    code: 'ALBEDO_INVALID_ARGUMENT',
  });
  t.match(await rejection(s.call('mcp_search_tools', { query: '' })), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });
  t.match(await rejection(s.call('mcp_search_tools', { query: 'x', limit: 99 })), { code: 'ALBEDO_INVALID_ARGUMENT' });
  t.match(
    await rejection(s.call('mcp_search_tools', { query: 'x'.repeat(1_001) })),
    { code: 'ALBEDO_INVALID_ARGUMENT' },
    'a query of at most 1,000 characters',
  );
  t.throws(() => s.search('y'.repeat(1_001)), { code: 'ALBEDO_INVALID_ARGUMENT' });
  t.match(
    await rejection(s.call('mcp_call_tool', { name: 'sdk/echo', arguments: { text: 'a' }, arguments_json: '{"text":"b"}' })),
    { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' },
    'arguments and arguments_json: which one? refused',
  );
  t.equal(text(await s.call(readText, { path: path.join(ROOT, 'package.json'), head: 1 })), '{', 'a loaded tool is called by its name too');

  const cost = s.cost();
  t.equal(
    cost.servers.reduce((n, x) => n + x.definitions, 0),
    cost.definitions,
    "the servers' parts add up",
  );
  t.ok(cost.advertised < cost.definitions / 3, `deferred costs ${cost.advertised} of ${cost.definitions} estimated tokens`);
  t.ok(
    cost.servers.every((x) => x.context > 0),
    'each server has its line in the context',
  );
});

t.test('alwaysLoad per server and per tool; all and auto', async (t) => {
  const albedo = await setup(t, { memory: { alwaysLoad: true }, filesystem: { alwaysLoad: ['list_directory', 'list_directroy'] } });
  const d = await albedo.sessions.open({ tools: 'deferred' });
  const always = [
    ...d
      .allTools()
      .filter((x) => x.description.startsWith('[server "memory"'))
      .map((x) => x.name),
    nameOf(d, 'filesystem', 'list_directory'),
  ];
  t.same(new Set(names(d).slice(3)), new Set(always), "the fixed three, then every memory tool and filesystem's list_directory");
  t.same(new Set(d.loaded()), new Set(always), 'loaded from the start');
  t.ok(
    d.warnings().some((w) => w.includes('alwaysLoad') && w.includes('list_directroy')),
    'a name the server does not offer is warned of',
  );
  const hits = d.search('read the whole knowledge graph', 1);
  t.equal(hits[0]!.name, nameOf(d, 'memory', 'read_graph'));
  t.same(new Set(names(d).slice(3)), new Set(always), 'finding an alwaysLoad tool adds nothing');
  d.search('make line edits to a file', 3);
  t.equal(new Set(names(d)).size, names(d).length, 'no definition given twice');

  const all = await albedo.sessions.open();
  t.same(
    all.tools().map((x) => x.name),
    [...all.allTools().map((x) => x.name), 'mcp_read_result'],
    'all: every definition, and mcp_read_result',
  );
  t.notOk(
    all.tools().some((x) => x.name === 'mcp_search_tools'),
    'and no search tool',
  );
  t.match(await rejection(all.call('mcp_search_tools', { query: 'echo' })), { code: 'ALBEDO_NOT_FOUND' }, 'not advertised, not callable');

  const roomy = await albedo.sessions.open({ tools: 'auto' });
  t.match(roomy.toolsMode, { option: 'auto', deferred: false }, `auto with the default budget: ${roomy.cost().definitions} tokens fit`);
  const tight = await albedo.sessions.open({ tools: 'auto', contextBudget: 10_000 });
  t.match(tight.toolsMode, { option: 'auto', deferred: true }, 'auto over a tenth of a 10,000-token budget defers');
  t.equal(names(tight)[0], 'mcp_search_tools');
  t.match(await rejection(albedo.sessions.open({ tools: 'some' as never })), { code: 'ALBEDO_INVALID_ARGUMENT' });
});

t.test('openai-strict: mcp_call_tool takes arguments_json', async (t) => {
  const albedo = await setup(t);
  const s = await albedo.sessions.open({ tools: 'deferred', profile: 'openai-strict' });
  const call = s.tools().find((x) => x.name === 'mcp_call_tool')!;
  t.same(Object.keys(call.inputSchema.properties as object).sort(), ['arguments_json', 'name'], 'strict mode cannot say "any object"');
  t.equal(text(await s.call('mcp_call_tool', { name: 'sdk/echo', arguments_json: '{"text":"strict"}' })), 'strict');
  t.match(await rejection(s.call('mcp_call_tool', { name: 'sdk/echo', arguments_json: '{not json' })), {
    code: 'ALBEDO_INVALID_ARGUMENT',
    outcome: 'not_run',
  });
  const search = s.tools().find((x) => x.name === 'mcp_search_tools')!;
  t.ok((search.inputSchema.required as string[]).includes('limit'), 'strict: limit required, nullable');
  t.ok(s.search('memory', 5).length === 5);
  t.match(
    await s.call('mcp_search_tools', { query: 'knowledge graph', limit: null }),
    { structuredContent: { tools: [{}] } },
    'a null limit is the default',
  );
});

t.test('auto stays deferred once it deferred; the fixed tools keep working across generations', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const servers = {
    everything: h.stdio(EVERYTHING, ['stdio']),
    filesystem: h.stdio(mod('server-filesystem'), [ROOT]),
    sdk: h.stdio(fixture('sdk-server.ts')),
  };
  h.write(servers);
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open({ tools: 'auto', contextBudget: 30_000 });
  t.match(s.toolsMode, { deferred: true }, `over a tenth of 30,000 tokens (${s.cost().definitions}): deferred`);
  s.search('echo');
  const before = names(s);
  const generation = s.generation;
  h.write({ sdk: servers.sdk });
  // The settings service sees the file change and the session reloads on its own.
  await until(() => s.generation > generation && s.status().length === 1, 60_000);
  t.ok(s.generation > generation, 'a new generation, small enough to fit');
  t.ok(s.cost().definitions < 3_000, `${s.cost().definitions} tokens would fit`);
  t.match(s.toolsMode, { option: 'auto', deferred: true }, 'but the session stays deferred');
  t.same(names(s).slice(0, 3), before.slice(0, 3), 'the fixed tools stay');
  t.equal(text(await s.call('mcp_call_tool', { name: 'sdk/echo', arguments: { text: 'still' } })), 'still');
});
