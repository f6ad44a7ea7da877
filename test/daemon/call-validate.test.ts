// POST /v1/sessions/{id}/calls checks the arguments against the schema the
// daemon holds before the call is sent (issue 26, item 5): a 400
// ALBEDO_INVALID_ARGUMENT, not run, whose `path` and `data` name the
// argument (the pointer, the keyword, a sentence per problem); also for the
// read_resource and get_prompt pseudo-operations. The fixture appends every
// tools/call it gets to a file, so "not sent" is seen, not assumed. The
// OpenAPI document describes the new shapes.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVERYTHING, NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { entry, startDaemon } from './harness.ts';

t.setTimeout(170_000);

t.test('a call whose arguments do not match: 400 naming the argument, nothing sent', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const logDir = mkdtempSync(path.join(tmpdir(), 'albedo-calls-'));
  t.teardown(() => rmSync(logDir, { recursive: true, force: true }));
  const log = path.join(logDir, 'calls.jsonl');
  const servers = { checked: entry(NODE, [fixture('checked-args-server.ts'), log]), everything: entry(NODE, [EVERYTHING, 'stdio']) };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }));
  const d = await startDaemon(t, home, { tag });
  const received = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []);

  const open = await d.call('POST', '/v1/sessions', { body: {} });
  t.equal(open.status, 201, open.text);
  const calls = `/v1/sessions/${open.body.id}/calls`;
  const listing = (await d.call('GET', `/v1/sessions/${open.body.id}/tools`)).body.tools as Array<{
    name: string;
    server: string;
    tool: string;
  }>;
  const record = listing.find((x) => x.server === 'checked' && x.tool === 'record')!.name;

  const missing = await d.call('POST', calls, { body: { name: record, arguments: { count: 2 } } });
  t.equal(missing.status, 400, missing.text);
  t.match(missing.body.error, {
    code: 'ALBEDO_INVALID_ARGUMENT',
    outcome: 'not_run',
    path: ['body', 'arguments', 'message'],
    data: {
      name: record,
      server: 'checked',
      tool: 'record',
      argument: 'message',
      path: ['message'],
      pointer: '/message',
      keyword: 'required',
    },
  });
  t.match(missing.body.error.message, /message is required/);
  t.same(missing.body.error.data.problems, [
    { argument: 'message', pointer: '/message', keyword: 'required', message: 'message is required' },
  ]);

  const several = await d.call('POST', calls, { body: { name: 'checked/record', arguments: { count: 1.5, options: { mode: 'x' } } } });
  t.equal(several.status, 400);
  t.same(
    several.body.error.data.problems.map((p: any) => [p.pointer, p.keyword]).sort(),
    [
      ['/count', 'type'],
      ['/message', 'required'],
      ['/options/mode', 'enum'],
    ].sort(),
    'every problem, each with its pointer and keyword',
  );
  t.match(several.body.error.message, /count must be an integer/);

  const resource = await d.call('POST', calls, { body: { name: 'everything/read_resource', arguments: {} } });
  t.equal(resource.status, 400, 'read_resource is checked too');
  t.match(resource.body.error, {
    path: ['body', 'arguments', 'uri'],
    data: { server: 'everything', tool: 'read_resource', keyword: 'required' },
  });
  const prompt = await d.call('POST', calls, { body: { name: 'everything/get_prompt', arguments: { name: 'no-such-prompt' } } });
  t.equal(prompt.status, 400, 'get_prompt too: its name is one of the prompts');
  t.match(prompt.body.error, { path: ['body', 'arguments', 'name'], data: { tool: 'get_prompt', argument: 'name', keyword: 'enum' } });

  t.same(received(), [], 'nothing reached the server');
  const good = await d.call('POST', calls, { body: { name: 'checked/record', arguments: { message: 'm' } } });
  t.equal(good.status, 200, good.text);
  t.equal(received().length, 1, 'a call that matches is sent');

  const doc = (await d.call('GET', '/openapi.json')).body;
  const call = doc.paths['/v1/sessions/{id}/calls'].post.responses;
  t.match(JSON.stringify(call['400']), /CallError/, 'the 400 is described with its data');
  t.ok(doc.components.schemas.CallError.properties.error.properties.data, 'CallError has data');
  t.match(JSON.stringify(doc.components.schemas.ListedTool), /"server".*"tool".*"kind"/, "the listing's tools have their origin");
  await d.call('DELETE', `/v1/sessions/${open.body.id}`);
});
