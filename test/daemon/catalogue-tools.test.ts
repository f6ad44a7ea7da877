// GET /v1/mcp/servers/{name}/tools (issue 26 item 7): a server's tools from
// its saved catalogue, over real HTTP to the real daemon, with
// server-everything saved by a strict save. Listing them opens no session and
// starts no server: the server's command is a shell line that notes every
// start in a file, so even a start that ended before a look at /proc counts.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVERYTHING, NODE, newTag, taggedPids, tempHome, waitNoLeftovers } from '../helpers.ts';
import { entry, srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const SECRET = 'secret-value-never-shown-7q';

t.test('the saved tools, without a session or a start; 404 unknown; null when none is saved', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const notes = mkdtempSync(path.join(tmpdir(), 'albedo-starts-'));
  t.teardown(() => rmSync(notes, { recursive: true, force: true }));
  const starts = path.join(notes, 'starts');
  const count = (): number => {
    try {
      return readFileSync(starts, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  const d = await startDaemon(t, home, { tag });

  // `sh -c 'echo >> starts; exec node everything stdio'`: server-everything itself, each start noted.
  const everything = entry('/bin/sh', ['-c', 'echo started >> "$0"; exec "$@"', starts, NODE, EVERYTHING, 'stdio']);
  const put = await d.call('PUT', srv('everything'), { body: { ...everything, secrets: { env: { EVERYTHING_KEY: SECRET } } } });
  t.equal(put.status, 201, 'added');
  t.equal(put.body.server.tools, 13, 'the strict save discovered and saved 13 tools');
  t.same(await waitNoLeftovers(tag, 20_000), [], 'the tried server has exited');
  const before = count();
  t.ok(before >= 1, 'the strict save started it');

  const r = await d.call('GET', srv('everything', '/tools'));
  t.equal(r.status, 200, 'read');
  t.equal(r.body.server, 'everything');
  t.equal(r.body.tools.length, 13, 'the 13 tools of server-everything');
  const echo = r.body.tools.find((x: any) => x.name === 'echo');
  t.match(echo, { name: 'echo', description: /echo/i, inputSchema: { type: 'object', properties: { message: {} } }, enabled: true });
  t.ok(
    r.body.tools.every((x: any) => typeof x.name === 'string' && x.inputSchema && x.enabled === true),
    'every tool named, with its schema',
  );
  t.match(r.body, { resources: Number, resourceTemplates: Number, prompts: Number, serverInfo: { name: String, version: String } });
  t.ok(typeof r.body.instructions === 'string' || r.body.instructions === null, 'instructions as saved');
  t.ok(!Number.isNaN(Date.parse(r.body.discoveredAt)), 'when it was discovered');
  t.notOk(r.text.includes(SECRET), 'no secret value in the answer');
  t.notOk('config' in r.body || 'secrets' in r.body, 'nothing of the entry or its credentials');

  t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session was opened');
  t.equal(count(), before, 'the server was not started again');
  t.same(taggedPids(tag), [], 'and nothing of it runs');

  const unknown = await d.call('GET', srv('nope', '/tools'));
  t.match(unknown, { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND', path: ['params', 'name'] } } });
  t.equal(
    (await d.call('GET', srv('everything', '/tools'), { token: null })).status,
    401,
    'the token is needed, as on every /v1/mcp route',
  );

  // Switched off when added: not tried, so nothing is saved for it.
  const off = await d.call('PUT', srv('later'), { body: { ...entry(NODE, [EVERYTHING, 'stdio']), enabled: false } });
  t.equal(off.status, 201, 'added switched off');
  const none = await d.call('GET', srv('later', '/tools'));
  t.same(
    [none.status, none.body],
    [
      200,
      {
        server: 'later',
        tools: null,
        resources: null,
        resourceTemplates: null,
        prompts: null,
        instructions: null,
        serverInfo: null,
        discoveredAt: null,
      },
    ],
    'no catalogue saved: 200 with tools null',
  );

  // The entry's tool filters are marked (they do not change the fingerprint: the saved catalogue stays).
  const patched = await d.call('PATCH', srv('everything'), { body: { disabledTools: ['echo'] } });
  t.equal(patched.status, 200, 'patched');
  const filtered = await d.call('GET', srv('everything', '/tools'));
  t.equal(filtered.body.tools.length, 13, 'still every tool the server listed');
  t.same(
    filtered.body.tools.filter((x: any) => !x.enabled).map((x: any) => x.name),
    ['echo'],
    'the one disabledTools names is marked',
  );

  const doc = (await d.call('GET', '/openapi.json')).body;
  t.ok(doc.paths['/v1/mcp/servers/{name}/tools']?.get, 'in the OpenAPI document');
});
