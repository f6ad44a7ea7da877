// Names you can call (issue 26, item 4), through the real `albedo` CLI and
// the real daemon with server-everything twice (as `everything` and `twin`)
// and the SDK fixture: every unambiguous form works — the advertised name,
// server/tool, server/read_resource and server/get_prompt, a tool name only
// one server has, the advertised name without its hash; a name several
// servers have is refused listing them; a miss suggests the nearest; the
// listing says where every definition comes from (FROM, and the JSON's
// server / tool / kind).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { EVERYTHING, NODE, newTag, tempHome } from '../helpers.ts';
import { entry, sdkServer, startDaemon } from '../daemon/harness.ts';
import { errorCode, piped } from './cli-harness.ts';

t.setTimeout(300_000);

t.test('every unambiguous form calls; ambiguous and unknown names are refused with the names meant', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  const servers = { everything: entry(NODE, [EVERYTHING, 'stdio']), twin: entry(NODE, [EVERYTHING, 'stdio']), sdk: sdkServer() };
  writeFileSync(path.join(e.home, 'extensions.json'), JSON.stringify({ mcp: { servers } }));
  const d = await startDaemon(t, e.home, { tag: e.tag });

  const listed = await piped(e, ['tools', '--json']);
  t.equal(listed.code, 0, listed.stderr);
  const tools = JSON.parse(listed.stdout).tools as Array<{ name: string; server: string | null; tool: string; kind: string }>;
  const named = (server: string | null, tool: string) => tools.find((x) => x.server === server && x.tool === tool)!;
  for (const x of tools) {
    t.ok(x.server === null || servers[x.server as keyof typeof servers], `${x.name}: its server`);
    t.ok(typeof x.tool === 'string' && x.tool.length > 0, `${x.name}: its raw name`);
  }
  t.match(named('everything', 'read_resource'), { kind: 'read_resource' });
  t.match(named('everything', 'get_prompt'), { kind: 'get_prompt' });
  t.match(named(null, 'mcp_read_result'), { name: 'mcp_read_result', kind: 'albedo' });
  t.match(named('twin', 'echo'), { kind: 'tool' });

  const table = await piped(e, ['tools']);
  t.equal(table.code, 0, table.stderr);
  const rows = table.stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.split(/\s{2,}/));
  t.equal(rows.length, tools.length, 'a row per definition');
  t.same(
    rows.filter((r) => !r[1]),
    [],
    'every row has its FROM',
  );
  t.same(
    rows.map((r) => r[1]),
    tools.map((x) => (x.server === null ? 'albedo' : `${x.server}/${x.tool}`)),
  );
  t.ok(rows.some((r) => r[1] === 'everything/read_resource') && rows.some((r) => r[1] === 'everything/get_prompt'));

  const ok = async (name: string, args: unknown, expect: RegExp, what: string) => {
    const r = await piped(e, ['call', name, '--args', JSON.stringify(args)]);
    t.equal(r.code, 0, `${what}: ${r.stderr}`);
    t.match(r.stdout, expect, what);
  };
  await ok(named('everything', 'echo').name, { message: 'advertised' }, /Echo: advertised/, 'the advertised name');
  await ok('everything/echo', { message: 'server/tool' }, /Echo: server\/tool/, 'server/tool');
  await ok('twin/echo', { message: 'the twin' }, /Echo: the twin/, 'server/tool of the other copy');
  await ok('mcp_everything_echo', { message: 'no hash' }, /Echo: no hash/, 'the advertised name without its hash');
  await ok('add', { a: 20, b: 22 }, /42/, 'a tool name only one server has');
  await ok('everything/read_resource', { uri: 'demo://resource/static/document/architecture.md' }, /architecture/i, 'server/read_resource');
  await ok('everything/get_prompt', { name: 'simple-prompt' }, /simple/i, 'server/get_prompt');

  const ambiguous = await piped(e, ['call', 'echo', '--args', '{"message":"x"}']);
  t.equal(ambiguous.code, 4, 'ambiguous: not found');
  t.equal(errorCode(ambiguous.stderr), 'ALBEDO_NOT_FOUND');
  for (const s of ['everything/echo', 'twin/echo', 'sdk/echo', named('everything', 'echo').name])
    t.match(ambiguous.stderr, s, `lists ${s}`);

  const typo = await piped(e, ['call', 'ecoh', '--args', '{"message":"x"}']);
  t.equal(typo.code, 4);
  t.match(typo.stderr, /did you mean .*everything\/echo/, 'a miss suggests the nearest');
  const inServer = await piped(e, ['call', 'everything/ecoh']);
  t.equal(inServer.code, 4);
  t.match(inServer.stderr, new RegExp(`did you mean ${named('everything', 'echo').name} \\(everything/echo\\)\\?`));
  const staleHash = await piped(e, ['call', `${named('everything', 'echo').name.slice(0, -2)}zz`]);
  t.match(staleHash.stderr, new RegExp(`did you mean ${named('everything', 'echo').name}`), 'a wrong hash: the name it was meant for');
  const server = await piped(e, ['call', 'everythin/get-sum', '--args', '{"a":1,"b":2}']);
  t.equal(server.code, 4, 'a server name that is not configured');
  t.match(server.stderr, /did you mean .*everything\/get-sum/);

  // Over HTTP: the candidates and the suggestions in `data`.
  const open = await d.call('POST', '/v1/sessions', { body: {} });
  const calls = `/v1/sessions/${open.body.id}/calls`;
  const amb = await d.call('POST', calls, { body: { name: 'echo', arguments: { message: 'x' } } });
  t.equal(amb.status, 404);
  t.match(amb.body.error, { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run', data: { name: 'echo', ambiguous: true } });
  t.same(amb.body.error.data.candidates.sort(), ['everything', 'twin', 'sdk'].map((s) => named(s, 'echo').name).sort());
  const near = await d.call('POST', calls, { body: { name: 'everything/get-summ', arguments: {} } });
  t.equal(near.status, 404);
  t.match(near.body.error.data, {
    name: 'everything/get-summ',
    server: 'everything',
    tool: 'get-summ',
    suggestions: [named('everything', 'get-sum').name],
  });
  const far = await d.call('POST', calls, { body: { name: 'zzzzzzzz', arguments: {} } });
  t.same(far.body.error.data.suggestions, [], 'nothing near: no suggestion');
  const listing = await d.call('GET', `/v1/sessions/${open.body.id}/tools`);
  t.match(
    listing.body.tools.find((x: any) => x.name === named('twin', 'get_prompt').name),
    { server: 'twin', tool: 'get_prompt', kind: 'get_prompt' },
  );
  await d.call('DELETE', `/v1/sessions/${open.body.id}`);
  t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session left behind');
});
