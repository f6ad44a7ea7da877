// GET /v1/mcp/servers/{name}/tools against hostile names and stale
// catalogues (issue 26 item 7, review), over real HTTP to the real daemon:
// a server name holding `/ # ? %2F`, spaces and non-ASCII letters is reached
// by its encoded segment; Object.prototype's keys are no server; the guard
// of every /v1 route holds (no CORS, Origin and Host checked, the token
// needed); a hostile server's text comes back as the data it sent; and a
// catalogue saved for another configuration (the file edited by hand since)
// is not shown as the server's.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, newTag, tempHome, until } from '../helpers.ts';
import { entry, srv, startDaemon } from './harness.ts';

t.setTimeout(120_000);

const NONE = {
  tools: null,
  resources: null,
  resourceTemplates: null,
  prompts: null,
  instructions: null,
  serverInfo: null,
  discoveredAt: null,
};

t.test('hostile names, the guard, a stale catalogue', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const hostile = entry(NODE, [fixture('catalogue-hostile-server.ts'), 'proto']);
  const names = ['a/b', 'h#x', 'q?x=1', 'p%2Fq', 'sp ace', 'ünï 名', 'toString'];
  for (const name of names) {
    t.equal((await d.call('PUT', srv(name), { body: hostile })).status, 201, `${name} added`);
    const r = await d.call('GET', srv(name, '/tools'));
    t.match(r, { status: 200, body: { server: name } }, `${name}: its own catalogue, by its encoded name`);
    t.equal(r.body.tools.length, 5);
  }
  t.equal((await d.call('GET', '/v1/mcp/servers/a/b/tools')).status, 404, 'an unencoded / is another path');

  const r = await d.call('GET', srv('toString', '/tools'));
  t.same(
    r.body.tools.map((x: any) => x.name),
    ['__proto__', 'constructor', 'toString', 'toString', 'hasOwnProperty'],
    'every tool as listed, in order: prototype names and a name twice',
  );
  t.match(r.body.tools[0].title, '<img src=x onerror=', "the server's text as it sent it (escaping is for who shows it)");
  t.match(r.body.serverInfo, { name: /^hostile-proto<img/, version: '1.0' });

  for (const name of ['__proto__', 'constructor', 'prototype']) {
    t.match(await d.call('GET', srv(name, '/tools')), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } }, `${name}: no server`);
  }
  const cross = await d.call('GET', srv('toString', '/tools'), { headers: { origin: 'http://evil.example' } });
  t.match(cross, { status: 403, body: { error: { code: 'ALBEDO_BAD_ORIGIN' } } }, 'another origin is refused');
  t.equal(cross.headers['access-control-allow-origin'], undefined, 'and no CORS header lets it read');
  const host = await d.call('GET', srv('toString', '/tools'), { headers: { host: `evil.example:${d.info.port}` } });
  t.match(host, { status: 421, body: { error: { code: 'ALBEDO_BAD_HOST' } } }, 'a Host that is not loopback is refused');
  t.equal((await d.call('GET', srv('toString', '/tools'), { token: 'not-the-token' })).status, 401, 'a wrong token is refused');

  // The file edited by hand: the saved catalogue was discovered for the old arguments, so it is not this entry's.
  const file = path.join(home, 'extensions.json');
  const config = JSON.parse(readFileSync(file, 'utf8'));
  config.mcp.servers.toString.args = [fixture('catalogue-hostile-server.ts'), 'none'];
  writeFileSync(file, JSON.stringify(config, null, 2));
  await until(async () => (await d.call('GET', srv('toString'))).body.config.args[1] === 'none', 20_000, 'the edit to be read');
  t.same((await d.call('GET', srv('toString', '/tools'))).body, { server: 'toString', ...NONE }, 'none saved for it as configured now');
  t.equal((await d.call('GET', srv('toString'))).body.tools, null, 'as the list says');
});
