// Gateways over Streamable HTTP (`/mcp/gateways/{name}`) on a real daemon, driven
// by real MCP clients: the official SDK client 2.x in the 2026-07-28 era and the
// 2025 one, and the 1.x client (initialize first). A composed gateway serves the
// session's tools under their stable names; a pass-through gateway serves one
// server's own tools, resources and prompts. Gateway tokens open their gateway and
// nothing else; a settings edit reaches a connected client as list_changed.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EVERYTHING, NODE, newTag, tempHome, until } from '../helpers.ts';
import { entry, sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(170_000);

const MODERN = '2026-07-28';
type Mode = 'modern' | 'legacy' | 'v1';

const url = (d: Daemon, name: string): URL => new URL(`http://127.0.0.1:${d.info.port}/mcp/gateways/${name}`);

async function connect(d: Daemon, name: string, mode: Mode, token = d.info.token) {
  const requestInit = { headers: { authorization: `Bearer ${token}` } };
  if (mode === 'v1') {
    const c = new Client1({ name: 'gw-test-v1', version: '1.0.0' });
    await c.connect(new Transport1(url(d, name), { requestInit }));
    return c as unknown as Client2;
  }
  const c = new Client2(
    { name: 'gw-test', version: '1.0.0' },
    { versionNegotiation: { mode: mode === 'modern' ? { pin: MODERN } : 'legacy' } },
  );
  await c.connect(new Transport2(url(d, name), { requestInit }));
  return c;
}

async function daemonWith(t: Test, gateways: Record<string, unknown>): Promise<Daemon> {
  const tag = newTag();
  const home = tempHome(t);
  const servers = { sdk: sdkServer(), everything: entry(NODE, [EVERYTHING, 'stdio']) };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers }, gateways }), { mode: 0o600 });
  return startDaemon(t, home, { tag });
}

t.test('a composed gateway: every client lists the session tools and calls through them', async (t) => {
  const d = await daemonWith(t, { all: {} });
  let names: string[] | undefined;
  for (const mode of ['modern', 'legacy', 'v1'] as const) {
    const c = await connect(d, 'all', mode);
    if (mode === 'modern') t.equal(c.getNegotiatedProtocolVersion(), MODERN, 'modern era');
    const tools = (await c.listTools()).tools;
    const now = tools.map((x) => x.name).sort();
    if (names) t.same(now, names, `${mode}: the same tools`);
    names = now;
    const echo = tools.find((x) => /^mcp_sdk_echo_/.test(x.name));
    t.ok(echo, `${mode}: the sdk server's echo under its stable name`);
    t.ok(
      tools.some((x) => /^mcp_everything_/.test(x.name)),
      `${mode}: the other server too`,
    );
    const r = (await c.callTool({ name: echo!.name, arguments: { text: `via ${mode}` } })) as any;
    t.equal(r.content[0].text, `via ${mode}`, `${mode}: the call went through`);
    const bad = await c.callTool({ name: echo!.name, arguments: { text: 42 } }).then(
      () => null,
      (e: any) => e,
    );
    t.equal(bad?.code, -32602, `${mode}: arguments refused before sending are Invalid Params`);
    await c.close();
  }
  // The session behind the gateway is an ordinary one: it is listed with its label.
  const sessions = (await d.call('GET', '/v1/sessions')).body;
  t.ok(JSON.stringify(sessions).includes('gateway:all'), 'the gateway session is listed');
});

t.test('a pass-through gateway: the server’s own tools, resources and prompts', async (t) => {
  const d = await daemonWith(t, { sdk: { server: 'sdk' }, off: { server: 'sdk', enabled: false } });
  for (const mode of ['modern', 'legacy'] as const) {
    const c = await connect(d, 'sdk', mode);
    const tools = (await c.listTools()).tools.map((x) => x.name);
    t.ok(tools.includes('echo') && tools.includes('add'), `${mode}: own names`);
    const sum = (await c.callTool({ name: 'add', arguments: { a: 2, b: 3 } })) as any;
    t.same(sum.structuredContent, { sum: 5 }, `${mode}: structured result passed through`);
    const res = (await c.listResources()).resources.map((x) => x.uri);
    t.ok(res.includes('fixture://readme'), `${mode}: resources`);
    const read = (await c.readResource({ uri: 'fixture://readme' })) as any;
    t.equal(read.contents[0].text, 'hello from the fixture', `${mode}: read`);
    const tpl = (await c.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate);
    t.ok(tpl.includes('fixture://items/{id}'), `${mode}: templates`);
    const p = (await c.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })) as any;
    t.match(p.messages[0].content.text, /Ada/, `${mode}: prompt`);
    await c.close();
  }
  const off = await connect(d, 'off', 'legacy').then(
    () => null,
    (e) => e,
  );
  t.ok(off, 'a switched-off gateway is not served');
  const res = await d.call('POST', '/mcp/gateways/nope', { body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
  t.equal(res.status, 404, 'an unknown gateway is 404');
  t.equal(res.body.error.code, 'ALBEDO_NOT_FOUND');
});

t.test('gateway tokens open their gateway and nothing else', async (t) => {
  const d = await daemonWith(t, { a: { server: 'sdk' }, b: { server: 'sdk' } });
  const minted = await d.call('POST', '/v1/gateways/a/tokens');
  t.equal(minted.status, 201, 'minted');
  const token = minted.body.token as string;
  const c = await connect(d, 'a', 'legacy', token);
  t.ok((await c.listTools()).tools.length > 0, 'the token opens its gateway');
  await c.close();
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
  };
  const other = await d.call('POST', '/mcp/gateways/b', { body: init, token, headers: { accept: 'application/json, text/event-stream' } });
  t.equal(other.status, 401, "another gateway's token is 401");
  for (const p of ['/v1/mcp', '/v1/gateways', '/v1/sessions', '/mcp']) {
    const r = await d.call('GET', p, { token });
    t.equal(r.status, 401, `${p}: a gateway token opens nothing else`);
  }
  const wrong = await d.call('POST', '/mcp/gateways/a', {
    body: init,
    token: token + 'x',
    headers: { accept: 'application/json, text/event-stream' },
  });
  t.equal(wrong.status, 401, 'a wrong token is 401');
  const revoked = await d.call('DELETE', `/v1/gateways/a/tokens/${minted.body.id}`);
  t.ok(revoked.status < 300, 'revoked');
  const after = await d.call('POST', '/mcp/gateways/a', { body: init, token, headers: { accept: 'application/json, text/event-stream' } });
  t.equal(after.status, 401, 'a revoked token is 401');
  t.notOk(d.lines.join('\n').includes(token), 'the token is in no log line');
});

t.test('a settings edit reaches a connected client as tools/list_changed', async (t) => {
  const d = await daemonWith(t, { all: { servers: { exclude: ['everything'] } } });
  for (const mode of ['legacy', 'modern'] as const) {
    const c = await connect(d, 'all', mode);
    let changed = 0;
    c.setNotificationHandler('notifications/tools/list_changed', () => void changed++);
    const before = (await c.listTools()).tools.map((x) => x.name);
    // A modern client hears of changes on its subscriptions/listen stream.
    const sub = mode === 'modern' ? await c.listen({ toolsListChanged: true }) : undefined;
    const name = `extra_${mode}`;
    const put = await d.call('PUT', srv(name), { body: sdkServer() });
    t.equal(put.status, 201, 'a server added');
    await until(() => changed > 0, 60_000, `${mode}: list_changed`);
    const now = (await c.listTools()).tools.map((x) => x.name);
    t.ok(now.length > before.length, `${mode}: the new server's tools are listed`);
    await sub?.close();
    await c.close();
  }
});
