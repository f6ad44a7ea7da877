// The REST bridge (daemon/rest-bridge.ts) reaches every server the API does, whatever its name: a server name may hold
// a slash (an HTTP server's derived name is its host and path, `h.example.com/mcp`) or a `%`, which a path spells
// `%2F` and `%25`. On a real daemon, each is read, edited and removed through the bridge as through the API — while an
// encoded slash, backslash or `%` in the first segment (which could hide `/mcp` or `/ui`), an encoded dot and a doubly
// encoded one are still refused, with nothing sent. And a gateway's own token opens no bridge (401).
import t from 'tap';
import { newTag, tempHome } from '../helpers.ts';
import { srv, startDaemon, type Daemon } from './harness.ts';

t.setTimeout(120_000);

/** One albedo_request call as a 2025-era MCP client sends it: its structuredContent and isError. */
async function bridge(d: Daemon, args: Record<string, unknown>): Promise<{ isError: boolean; out: any }> {
  const r = await d.call('POST', '/mcp', {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'albedo_request', arguments: args } },
    headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
  });
  const data = /^data: (.*)$/m.exec(r.text);
  const result = (data ? JSON.parse(data[1]!) : r.body).result;
  return { isError: result.isError === true, out: result.structuredContent };
}

t.test('servers named with a slash or a % through the bridge', async (t) => {
  const d = await startDaemon(t, tempHome(t), { tag: newTag() });
  const entry = { command: '/bin/true', enabled: false };
  for (const name of ['h.example.com/mcp', '50%', 'a\\b']) {
    t.equal((await d.call('PUT', srv(name), { body: entry })).status, 201, `${name} configured`);
    const path = `/v1/mcp/servers/${encodeURIComponent(name)}`;
    const read = await bridge(d, { method: 'GET', path });
    t.same([read.isError, read.out.status, read.out.body?.name], [false, 200, name], `${name}: read through the bridge`);
    const edit = await bridge(d, { method: 'PUT', path, body: { ...entry, args: ['x'] } });
    t.same([edit.isError, edit.out.status], [false, 200], `${name}: edited`);
    t.same((await d.call('GET', srv(name))).body.config.args, ['x'], `${name}: the edit is in force`);
    const gone = await bridge(d, { method: 'DELETE', path });
    t.same([gone.isError, gone.out.status], [false, 204], `${name}: removed`);
    t.equal((await d.call('GET', srv(name))).status, 404, `${name}: gone`);
  }

  for (const path of ['/mcp%2Fgateways', '/v1%2F..%2Fmcp', '/ui%5Cx', '/v1%25', '/v1/%2e%2e/mcp', '/v1/%252e%252e/mcp', '/v1/x%252E']) {
    const r = await bridge(d, { method: 'GET', path });
    t.same([r.isError, r.out.error?.code, r.out.error?.path], [true, 'ALBEDO_INVALID_ARGUMENT', ['path']], `${path}: refused`);
  }
});

t.test("a gateway's token opens no bridge: 401, and no API request through it", async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  t.equal((await d.call('PUT', '/v1/gateways/g', { body: {} })).status, 201);
  const { token } = (await d.call('POST', '/v1/gateways/g/tokens')).body;
  const call = { name: 'albedo_request', arguments: { method: 'POST', path: '/v1/gateways/g/tokens' } };
  const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  for (const p of ['/mcp', '/mcp/', '/mcp?x=1']) {
    const r = await d.call('POST', p, { body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: call }, headers, token });
    t.same([r.status, r.body?.error?.code], [401, 'ALBEDO_UNAUTHORIZED'], `${p} with a gateway token`);
  }
  t.equal((await d.call('GET', '/v1/gateways/g')).body.tokens.length, 1, 'no token made through it');
});
