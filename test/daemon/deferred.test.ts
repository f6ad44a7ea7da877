// Deferred tools and context accounting over the daemon's HTTP API (issue
// 13): a session opened with `tools: "deferred"` lists the fixed set, a
// search through POST …/search or through mcp_search_tools loads what it
// finds, mcp_call_tool calls like a direct call, `?all=true` gives every
// definition, and every tools answer reports the estimated token cost per
// server. The real daemon, real servers.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { EVERYTHING, NODE, ROOT, fixture, newTag, tempHome } from '../helpers.ts';
import { bigText } from '../fixtures/results-data.ts';
import { entry, sdkServer, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const textOf = (result: any): string => result?.content?.[0]?.text;

t.test('deferred sessions over HTTP', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const memory = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({
      mcp: {
        servers: {
          sdk: sdkServer(),
          everything: entry(NODE, [EVERYTHING, 'stdio']),
          memory: entry(NODE, [memory], { alwaysLoad: ['read_graph'] }),
        },
      },
    }),
  );
  const d = await startDaemon(t, home, { tag });

  const bad = await d.call('POST', '/v1/sessions', { body: { tools: 'lazy' } });
  t.match(bad, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'tools'] } } });
  const opened = await d.call('POST', '/v1/sessions', { body: { tools: 'deferred', profile: 'anthropic' } });
  t.equal(opened.status, 201);
  t.match(opened.body, { toolsOption: 'deferred', deferred: true, tools: 4 }, "search, call, read, and memory's read_graph");
  const id = opened.body.id as string;

  const tools = await d.call('GET', `/v1/sessions/${id}/tools`);
  t.equal(tools.status, 200);
  const names = tools.body.tools.map((x: { name: string }) => x.name);
  t.same(names.slice(0, 3), ['mcp_search_tools', 'mcp_call_tool', 'mcp_read_result']);
  t.match(names[3], /^mcp_memory_read_graph_/, 'the alwaysLoad tool');
  t.same(tools.body.loaded, [names[3]]);
  t.ok(
    tools.body.cost.advertised < tools.body.cost.definitions,
    `${tools.body.cost.advertised} of ${tools.body.cost.definitions} estimated tokens advertised`,
  );
  t.same(
    tools.body.cost.servers.map((s: { name: string }) => s.name),
    ['sdk', 'everything', 'memory'],
    'a cost per server',
  );
  const every = await d.call('GET', `/v1/sessions/${id}/tools?all=true`);
  t.ok(every.body.tools.length > 20 && every.body.deferred === false, 'all=true: every definition');
  t.equal(every.body.cost.advertised, every.body.cost.definitions);

  const found = await d.call('POST', `/v1/sessions/${id}/search`, { body: { query: 'add two numbers', limit: 3 } });
  t.equal(found.status, 200);
  t.ok(
    found.body.tools.length <= 3 &&
      found.body.tools.some((x: { server: string; name: string }) => x.server === 'sdk' && /_add_/.test(x.name)),
    'sdk add found',
  );
  const add = found.body.tools.find((x: { server: string; name: string }) => x.server === 'sdk' && /_add_/.test(x.name));
  t.same(
    every.body.tools.find((x: { name: string }) => x.name === add.name).inputSchema,
    add.inputSchema,
    'the definition the session would advertise',
  );
  t.ok(found.body.loaded.includes(add.name), 'loaded');
  const after = await d.call('GET', `/v1/sessions/${id}/tools`);
  t.same(
    after.body.tools.slice(0, names.length).map((x: { name: string }) => x.name),
    names,
    'the list grew at its end',
  );
  t.match(await d.call('POST', `/v1/sessions/${id}/search`, { body: { query: '' } }), {
    status: 400,
    body: { error: { code: 'ALBEDO_INVALID_ARGUMENT' } },
  });

  const byModel = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'mcp_search_tools', arguments: { query: 'echo' } } });
  t.equal(byModel.status, 200);
  t.ok(byModel.body.result.structuredContent.tools.length >= 2, "the model's search: a tool result");
  const viaCall = await d.call('POST', `/v1/sessions/${id}/calls`, {
    body: { name: 'mcp_call_tool', arguments: { name: add.name, arguments: { a: 2, b: 5 } } },
  });
  const direct = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: add.name, arguments: { a: 2, b: 5 } } });
  t.same(viaCall.body, direct.body, 'mcp_call_tool answers as the direct call');
  t.equal(textOf(viaCall.body.result), '7');
  const missing = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'mcp_call_tool', arguments: { name: 'sdk/nothing' } } });
  const missingDirect = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'sdk/nothing' } });
  t.same(
    [missing.status, missing.body.error.code],
    [missingDirect.status, missingDirect.body.error.code],
    'an unknown tool: the same status and code',
  );
  t.equal(missing.status, 404);
});

t.test('result budgets over HTTP: the cut, the pages, the errors', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { results: entry(NODE, [fixture('results-server.ts')]) } } }),
  );
  const d = await startDaemon(t, home, { tag });
  const id = (await d.call('POST', '/v1/sessions', { body: { resultBudget: 2_000 } })).body.id as string;
  const r = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'results/text', arguments: { chars: 100_000 } } });
  t.equal(r.status, 200);
  const [cut] = r.body.result._meta['albedo/cut'];
  const shown = r.body.result.content[0].text as string;
  t.ok(shown.length <= 8_000, `${shown.length} characters shown (2,000 tokens)`);
  let offset: number | null = cut.shown;
  let text = shown;
  while (offset !== null) {
    const page = await d.call('GET', `/v1/sessions/${id}/results/${cut.id}?offset=${offset}&limit=30000`);
    t.equal(page.status, 200);
    text += page.body.data;
    offset = page.body.next;
  }
  t.equal(text, bigText(100_000), 'read back whole over HTTP');
  t.match(await d.call('GET', `/v1/sessions/${id}/results/nothing`), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });
  t.match(await d.call('GET', `/v1/sessions/${id}/results/${cut.id}?offset=999999999`), {
    status: 400,
    body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['query', 'offset'] } },
  });
  t.match(await d.call('GET', `/v1/sessions/${id}/results/${cut.id}?offset=-1`), { status: 400 });
  const viaTool = await d.call('POST', `/v1/sessions/${id}/calls`, {
    body: { name: 'mcp_read_result', arguments: { id: cut.id, offset: cut.shown } },
  });
  t.equal(
    viaTool.body.result.content[0].text,
    bigText(100_000).slice(cut.shown, cut.shown + viaTool.body.result.content[0].text.length),
    "the model's reader",
  );
});
