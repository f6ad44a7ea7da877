import t, { type Test } from 'tap';
import { albedoFor, newTag, server, fixture, EVERYTHING } from '../helpers.ts';
import {
  catalogueDefinitions,
  filterTools,
  resolveCall,
  serverDefinitions,
  MAX_PROMPT_ENUM,
  type Definitions,
  type ServerCatalogue,
} from '../../services/catalogue/definitions.ts';
import { MAX_DESCRIPTION, MAX_LISTED, boundText } from '../../services/catalogue/definitions-text.ts';
import { NAME_RULE, nameOf, sha256, type Digest } from '../../services/catalogue/names.ts';
import type { Normalise } from '../../protocol/catalogue.ts';
import type { Catalogue } from '../../protocol/mcp.ts';
import type { Connection } from '../../api/connection.ts';
import { AlbedoError } from '../../protocol/errors.ts';

/** The trivial normaliser: an object schema with type "object" passes as is, anything else is refused. */
const trivial: Normalise = (schema) =>
  schema !== null && typeof schema === 'object' && (schema as { type?: unknown }).type === 'object'
    ? { ok: true, schema: schema as Record<string, unknown>, notes: [] }
    : { ok: false, reason: 'the root is not an object schema' };

// Real catalogues: server-everything, the SDK 2.x and 1.x fixtures, and a paged 1.x server with tools only.
const tag = newTag();
const albedo = await albedoFor(t, tag);
const conns: Record<string, Connection> = {
  everything: await albedo.connect(server(tag, EVERYTHING, ['stdio']), { name: 'everything' }),
  sdk: await albedo.connect(server(tag, fixture('sdk-server.ts')), { name: 'sdk' }),
  sdk1: await albedo.connect(server(tag, fixture('sdk1-server.ts')), { name: 'sdk1' }),
  paged: await albedo.connect(server(tag, fixture('sdk1-paged-server.ts'), ['--tools', '250']), { name: 'paged' }),
};
const cat = (name: string): Catalogue => structuredClone(conns[name]!.catalogue);
const entries = (): ServerCatalogue[] => Object.keys(conns).map((s) => ({ server: s, catalogue: cat(s) }));

function checkShape(t: Test, d: Definitions): void {
  t.equal(d.routes.size, d.tools.length, 'one route per definition');
  t.equal(new Set(d.tools.map((x) => x.name)).size, d.tools.length, 'names are distinct');
  for (const tool of d.tools) {
    if (!NAME_RULE.test(tool.name)) t.fail(`${tool.name} breaks the rule`);
    if (tool.description.length > MAX_DESCRIPTION) t.fail(`${tool.name}'s description is ${tool.description.length} long`);
    if (!d.routes.has(tool.name)) t.fail(`${tool.name} has no route`);
    const route = d.routes.get(tool.name)!;
    if (!tool.description.startsWith(`[server ${JSON.stringify(route.server)}`)) t.fail(`${tool.name} does not say its server`);
  }
}

t.test('real catalogues: names, routes back to the raw tool, pseudo-operations exactly when offered', async (t) => {
  for (const [s, conn] of Object.entries(conns)) {
    const c = conn.catalogue;
    const d = serverDefinitions({ server: s, catalogue: cat(s) }, { normalise: trivial });
    checkShape(t, d);
    t.same(d.warnings, [], `${s}: nothing left out`);
    const routedTools = [...d.routes.values()].flatMap((r) => (r.kind === 'tool' ? [r.tool] : []));
    t.same(routedTools.sort(), c.tools.map((x) => x.name).sort(), `${s}: every raw tool routed exactly once`);
    const kinds = [...d.routes.values()].map((r) => r.kind);
    t.equal(
      kinds.includes('read_resource'),
      c.resources.length + c.resourceTemplates.length > 0,
      `${s}: read_resource iff resources or templates`,
    );
    t.equal(kinds.includes('get_prompt'), c.prompts.length > 0, `${s}: get_prompt iff prompts`);
    for (const [name, r] of d.routes) t.equal(name, nameOf(r), "the identity's own name");
  }
  const paged = serverDefinitions({ server: 'paged', catalogue: cat('paged') }, { normalise: trivial });
  t.equal(paged.tools.length, 250, 'a tools-only server gets no pseudo-operations');
});

t.test('calls through the routes reach the raw tool, resource and prompt', async (t) => {
  const d = serverDefinitions({ server: 'everything', catalogue: cat('everything') }, { normalise: trivial });
  const byKind = (k: string) => d.tools.find((x) => d.routes.get(x.name)!.kind === k)!;
  const sum = resolveCall(d.routes, nameOf({ server: 'everything', kind: 'tool', tool: 'get-sum' }), ['everything']);
  t.same(sum.route, { server: 'everything', kind: 'tool', tool: 'get-sum' });
  const r = await conns.everything!.callTool((sum.route as { tool: string }).tool, { a: 20, b: 22 });
  t.match(JSON.stringify(r.content), /42/);
  const read = byKind('read_resource');
  t.same(read.inputSchema.required, ['uri']);
  const uri = conns.everything!.catalogue.resources[0]!.uri;
  t.ok(read.description.includes(`- ${uri} (`), 'the listing names the resource URI');
  t.equal((await conns.everything!.readResource(uri)).contents[0]!.uri, uri);
  const prompt = byKind('get_prompt');
  const props = prompt.inputSchema.properties as Record<string, { enum?: string[]; properties?: Record<string, unknown> }>;
  t.same(
    props.name!.enum,
    conns.everything!.catalogue.prompts.map((p) => p.name),
    'prompt names as an enum',
  );
  t.ok(props.arguments!.properties?.city, 'the declared arguments are named properties (test/catalogue/prompt-args.test.ts covers them)');
  t.match(prompt.description, /- args-prompt\(city, state\?\)/, 'prompts listed with their arguments, optional ones marked');
  t.ok((await conns.everything!.getPrompt('args-prompt', { city: 'Oslo' })).messages.length > 0);
});

t.test('enabledTools is an allow-list, disabledTools removes, both exact; pseudo-operations stay', async (t) => {
  const run = (filters: ServerCatalogue['filters']) =>
    serverDefinitions({ server: 'everything', catalogue: cat('everything'), filters }, { normalise: trivial });
  const tools = (d: Definitions) => [...d.routes.values()].flatMap((r) => (r.kind === 'tool' ? [r.tool] : [])).sort();
  const all = conns.everything!.catalogue.tools.map((x) => x.name);
  t.same(tools(run({ enabledTools: ['echo', 'get-sum'] })), ['echo', 'get-sum']);
  t.same(tools(run({ disabledTools: ['echo'] })), all.filter((n) => n !== 'echo').sort());
  t.same(tools(run({ enabledTools: ['echo', 'get-sum'], disabledTools: ['echo'] })), ['get-sum']);
  t.same(tools(run({ enabledTools: [] })), [], 'an empty allow-list allows nothing');
  t.same(tools(run({ enabledTools: ['get_sum', 'ECHO'] })), [], 'exact names only: no sanitised or case-folded match');
  const d = run({ enabledTools: ['get-sum', 'nope'], disabledTools: ['gone'] });
  t.equal(d.warnings.length, 2, 'filter entries that match nothing are warned about');
  t.match(d.warnings, [/enabledTools.*"nope"/, /disabledTools.*"gone"/]);
  t.equal(d.tools.length, 3, 'get-sum + read_resource + get_prompt');
  t.same(filterTools(conns.sdk!.catalogue.tools, {}).length, conns.sdk!.catalogue.tools.length);
});

t.test('descriptions are bounded with the cut marked, and the listings say how many more there are', async (t) => {
  const c = cat('sdk');
  c.tools[0]!.description = 'w'.repeat(5_000);
  c.resources = Array.from({ length: 300 }, (_, i) => ({
    ...c.resources[0]!,
    uri: `fixture://r/${i}`,
    name: `r${i}`,
    description: 'x'.repeat(300),
  }));
  c.prompts = Array.from({ length: MAX_PROMPT_ENUM + 1 }, (_, i) => ({ ...c.prompts[0]!, name: `p${i}` }));
  const d = serverDefinitions({ server: 'sdk', catalogue: c }, { normalise: trivial });
  checkShape(t, d);
  const long = d.tools.find((x) => (d.routes.get(x.name) as { tool?: string }).tool === c.tools[0]!.name)!;
  const frame = `[server "sdk", tool ${JSON.stringify(c.tools[0]!.name)}] `;
  const m = /^(.*) … \[cut: ([\d,]+) more characters\]$/s.exec(long.description)!;
  t.ok(m, 'the cut is marked');
  t.ok(long.description.length <= MAX_DESCRIPTION && long.description.length > MAX_DESCRIPTION - 5);
  t.equal(m[1]!.length + Number(m[2]!.replace(/,/g, '')), frame.length + 5_000, 'the marker counts what was cut');
  const read = d.tools.find((x) => d.routes.get(x.name)!.kind === 'read_resource')!;
  const listed = read.description.split('\n').filter((l) => l.startsWith('- ')).length;
  const more = Number(/… and ([\d,]+) more resources and templates not listed$/.exec(read.description)![1]!.replace(/,/g, ''));
  t.ok(listed > 0 && listed <= MAX_LISTED, `${listed} listed`);
  t.equal(listed + more, 301, 'listed + not listed = 300 resources and 1 template');
  t.ok(read.description.includes('\n- template fixture://items/{id} (item)\n'), 'templates come first: each stands for many URIs');
  t.notOk(read.description.includes('xxx'), 'entries lose their descriptions when that lists more of them');
  const prompt = d.tools.find((x) => d.routes.get(x.name)!.kind === 'get_prompt')!;
  const props = prompt.inputSchema.properties as Record<string, { enum?: string[]; type: string }>;
  t.equal(props.name!.enum, undefined, 'too many prompts for an enum: a string');
  t.equal(props.name!.type, 'string');
  t.match(prompt.description, /… and [\d,]+ more prompts not listed$/);
  t.equal(boundText('short'), 'short');
  t.equal(boundText('😀'.repeat(600)).length <= MAX_DESCRIPTION, true);
  t.notOk(/[\ud800-\udbff] …/.test(boundText('😀'.repeat(600))), 'a cut never splits a surrogate pair');
});

t.test('a refused schema leaves the tool out with a warning naming it; the others stay', async (t) => {
  const c = cat('sdk1');
  c.tools[0]!.inputSchema = { type: 'string' };
  const d = serverDefinitions({ server: 'sdk1', catalogue: c }, { normalise: trivial });
  checkShape(t, d);
  t.equal(d.tools.length, c.tools.length - 1 + 2);
  t.notOk([...d.routes.values()].some((r) => r.kind === 'tool' && r.tool === c.tools[0]!.name));
  t.same(d.leftOut, [
    { server: 'sdk1', operation: c.tools[0]!.name, kind: 'tool', reason: 'schema_refused', detail: 'the root is not an object schema' },
  ]);
  t.equal(d.warnings.length, 1);
  t.ok(d.warnings[0]!.includes('"sdk1"') && d.warnings[0]!.includes(JSON.stringify(c.tools[0]!.name)), 'the warning names server and tool');
  // Our own schemas go through the normaliser too, with the profile.
  const seen: string[] = [];
  const picky: Normalise = (schema, profile) => {
    seen.push(profile);
    return (schema as { properties?: Record<string, unknown> }).properties?.uri
      ? { ok: false, reason: 'no uri' }
      : { ok: true, schema: schema as Record<string, unknown>, notes: ['changed'] };
  };
  const p = serverDefinitions({ server: 'sdk1', catalogue: cat('sdk1') }, { normalise: picky, profile: 'openai' });
  t.ok(seen.length > 0 && seen.every((x) => x === 'openai'));
  t.notOk(
    [...p.routes.values()].some((r) => r.kind === 'read_resource'),
    'a refused read_resource is left out',
  );
  t.match(p.leftOut, [{ kind: 'read_resource', reason: 'schema_refused' }]);
  t.equal(p.notes.length, p.tools.length, "the normaliser's notes are kept, one per note");
});

t.test('a server listing one tool twice: the first is advertised, the second warned about', async (t) => {
  const c = cat('sdk');
  c.tools.push({ ...c.tools[0]!, description: 'impostor' });
  const d = serverDefinitions({ server: 'sdk', catalogue: c }, { normalise: trivial });
  checkShape(t, d);
  t.match(d.leftOut, [{ reason: 'duplicate', operation: c.tools[0]!.name }]);
  t.notOk(d.tools.some((x) => x.description.includes('impostor')));
});

t.test('a session over all servers: names unique, each the same as the server alone gets (adding a server renames nothing)', async (t) => {
  const all = catalogueDefinitions(entries(), { normalise: trivial });
  checkShape(t, all);
  for (const e of entries()) {
    const alone = serverDefinitions(e, { normalise: trivial });
    for (const [name, r] of alone.routes) t.same(all.routes.get(name), r);
  }
  t.throws(() => catalogueDefinitions([...entries(), entries()[0]!], { normalise: trivial }), { code: 'ALBEDO_INVALID_ARGUMENT' });
});

t.test('a forced collision across two servers is resolved and both route correctly', async (t) => {
  // "a-b" and "a.b" both sanitise to a_b; the digest makes their echo names collide outright.
  const ids = [
    { server: 'a-b', kind: 'tool' as const, tool: 'echo' },
    { server: 'a.b', kind: 'tool' as const, tool: 'echo' },
  ];
  const seen = new Set<string>();
  for (const id of ids)
    nameOf(id, (d) => {
      seen.add(Buffer.from(d).toString('hex'));
      return sha256(d);
    });
  const digest: Digest = (d) => (seen.has(Buffer.from(d).toString('hex')) ? new Uint8Array(32) : sha256(d));
  const d = catalogueDefinitions(
    [
      { server: 'a.b', catalogue: cat('sdk') },
      { server: 'a-b', catalogue: cat('sdk') },
    ],
    { normalise: trivial, digest },
  );
  checkShape(t, d);
  const echoes = [...d.routes].filter(([, r]) => r.kind === 'tool' && r.tool === 'echo');
  t.equal(echoes.length, 2);
  t.equal(echoes.find(([, r]) => r.server === 'a-b')![0], 'mcp_a_b_echo_aaaaaaaaaa', 'the identity that sorts first keeps the name');
  t.equal(resolveCall(d.routes, 'a.b/echo', ['a.b', 'a-b']).route.server, 'a.b');
});

t.test('resolveCall: advertised names, server/tool with / and _ in names, never by splitting the name', async (t) => {
  const c = cat('sdk');
  c.tools.push(
    { name: 'fs/read', inputSchema: { type: 'object' } },
    { name: 'a_b', inputSchema: { type: 'object' } },
    { name: 'read_resource', inputSchema: { type: 'object' } },
  );
  const servers = ['docs', 'mcp.example.com/mcp', 'mcp.example.com'];
  const d = catalogueDefinitions(
    [
      { server: 'docs', catalogue: c },
      { server: 'mcp.example.com/mcp', catalogue: { ...cat('sdk1'), tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } },
      { server: 'mcp.example.com', catalogue: { ...cat('paged'), tools: [{ name: 'mcp/echo', inputSchema: { type: 'object' } }] } },
    ],
    { normalise: trivial },
  );
  checkShape(t, d);
  const tool = (name: string) => resolveCall(d.routes, name, servers).route;
  t.same(tool('docs/fs/read'), { server: 'docs', kind: 'tool', tool: 'fs/read' }, 'split at the first / only');
  t.same(tool('docs/a_b'), { server: 'docs', kind: 'tool', tool: 'a_b' });
  t.same(tool('docs/read_resource'), { server: 'docs', kind: 'tool', tool: 'read_resource' }, 'the tool, not the pseudo-operation');
  // Two splits each name a routed tool (server mcp.example.com's mcp/echo, server mcp.example.com/mcp's echo): refused, naming both.
  t.throws(
    () => tool('mcp.example.com/mcp/echo'),
    { code: 'ALBEDO_NOT_FOUND', data: { ambiguous: true } },
    'two splits naming a routed tool',
  );
  const adv = nameOf({ server: 'docs', kind: 'tool', tool: 'a_b' });
  t.same(resolveCall(d.routes, adv, servers), { name: adv, route: { server: 'docs', kind: 'tool', tool: 'a_b' } });
  const e1 = t.throws(() => resolveCall(d.routes, 'docs/nope', servers)) as AlbedoError;
  t.match(e1, { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run', data: { name: 'docs/nope', server: 'docs', tool: 'nope' } });
  const e2 = t.throws(() => resolveCall(d.routes, 'other/echo', servers)) as AlbedoError;
  t.match(e2, { code: 'ALBEDO_NOT_FOUND', data: { name: 'other/echo' } });
  t.equal((e2.data as { server?: string }).server, undefined, 'no configured server named');
  // An advertised name is never split, even when a prefix of it looks like a server name (without its hash it is that definition's).
  t.throws(() => resolveCall(d.routes, 'mcp_docs_echo_b', ['mcp']), { code: 'ALBEDO_NOT_FOUND' });
  t.same(tool('mcp_docs_echo'), { server: 'docs', kind: 'tool', tool: 'echo' }, 'the advertised name without its hash, not server mcp');
  t.throws(() => resolveCall(d.routes, 'docs/fs', new Set(servers)), { code: 'ALBEDO_NOT_FOUND' });
});
