// The daemon's own token goes to the daemon's loopback port, and only there. Two places send it: the REST bridge
// (daemon/rest-bridge.ts: the caller's token, every right of the API) and `albedo gateway NAME` (its upgrade). Run with
// Node's proxy variables (NODE_USE_ENV_PROXY=1 and HTTP_PROXY, as a proxied network sets them for every Node tool),
// neither may route that request, token and all, through the proxy: a real daemon and a real CLI under those
// variables, a real proxy on loopback that records what reaches it, and each answered without the proxy hearing of it.
import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { BIN, startDaemon } from './harness.ts';

t.setTimeout(120_000);

type Tap = { teardown(fn: () => unknown): void };

/** A CONNECT proxy on loopback that records every request, tunnels CONNECTs, and refuses plain proxying. */
async function recordingProxy(t: Tap): Promise<{ at: string; seen: string[] }> {
  const seen: string[] = [];
  const proxy = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(502).end();
  });
  // A tunnel as a proxy makes it: what goes through it to an http:// origin (the token included) is in clear.
  proxy.on('connect', (req: http.IncomingMessage, sock: net.Socket, head: Buffer) => {
    seen.push(`CONNECT ${req.url}`);
    const [host, port] = String(req.url).split(':');
    const up = net.connect(Number(port), host, () => {
      sock.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      sock.pipe(up).pipe(sock);
    });
    up.on('error', () => sock.destroy());
    sock.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())));
  return { at: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`, seen };
}

/** Node's proxy variables, as a proxied network sets them, pointing at `at`. */
const proxied = (at: string) => ({ NODE_USE_ENV_PROXY: '1', HTTP_PROXY: at, http_proxy: at, NO_PROXY: '', no_proxy: '' });

t.test('a bridge call never goes through an HTTP proxy of the environment', async (t) => {
  const { at, seen } = await recordingProxy(t);
  const env = proxied(at);
  const d = await startDaemon(t, tempHome(t), { tag: newTag(), env });
  const call = { name: 'albedo_request', arguments: { method: 'GET', path: '/v1/gateways' } };
  const r = await d.call('POST', '/mcp', {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: call },
    headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
  });
  t.equal(r.status, 200, 'served');
  const data = /^data: (.*)$/m.exec(r.text);
  const result = data ? JSON.parse(data[1]!).result : JSON.parse(r.text).result;
  t.same(result.structuredContent, { status: 200, body: { gateways: [], invalid: null } }, 'answered by the API');
  t.same(seen, [], 'the proxy heard nothing: not the request, not the token');
});

// The same for `albedo gateway NAME`, which upgrades one request to the daemon with the daemon's token.
t.test('albedo gateway NAME never sends its upgrade, token and all, through an HTTP proxy of the environment', async (t) => {
  const { at, seen } = await recordingProxy(t);
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  t.equal((await d.call('PUT', '/v1/gateways/g', { body: {} })).status, 201);
  const env = { ...process.env, ALBEDO_HOME: home, ...proxied(at) } as Record<string, string>;
  const client = new Client({ name: 'host', version: '1.0.0' });
  const connected = await client
    .connect(new StdioClientTransport({ command: NODE, args: [BIN, 'gateway', 'g'], env, stderr: 'pipe' }))
    .then(
      () => true,
      () => false,
    );
  await client.close();
  t.ok(connected, 'the host is served');
  t.same(seen, [], 'the proxy heard nothing');
});
