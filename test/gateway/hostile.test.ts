// A gateway attacked on a real daemon (loopback, real servers): a stdio host that sends a message past the bound, a
// local process without the token that keeps a refused upgrade open, a 2025-era host whose large results would pile
// up in the resumption store, and a gateway whose session is closed under connected clients.
import t, { type Test } from 'tap';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { newTag, tempHome } from '../helpers.ts';
import { sdkServer, startDaemon, type Daemon } from '../daemon/harness.ts';
import { MAX_BYTES } from '../../daemon/gateway/event-store.ts';

t.setTimeout(170_000);

async function daemonWith(t: Test, gateways: Record<string, unknown>): Promise<Daemon> {
  const tag = newTag();
  const home = tempHome(t);
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } }, gateways }), { mode: 0o600 });
  return startDaemon(t, home, { tag });
}

/** A raw socket that has sent an upgrade request for `p`; `head` resolves with the answer's status line. */
function upgrade(d: Daemon, p: string, token: string | null, upgradeTo = 'albedo-mcp-stdio') {
  const socket = net.connect({ port: d.info.port, host: '127.0.0.1', allowHalfOpen: true });
  const auth = token === null ? '' : `authorization: Bearer ${token}\r\n`;
  socket.write(`GET ${p} HTTP/1.1\r\nhost: 127.0.0.1:${d.info.port}\r\nconnection: Upgrade\r\nupgrade: ${upgradeTo}\r\n${auth}\r\n`);
  let buf = '';
  let switched = false;
  const lines: string[] = [];
  const waiting: Array<() => void> = [];
  let answered: (line: string) => void = () => {};
  const status = new Promise<string>((resolve) => (answered = resolve));
  socket.on('data', (c: Buffer) => {
    buf += c.toString('utf8');
    if (!switched) {
      const at = buf.indexOf('\r\n\r\n');
      if (at < 0) return;
      answered(buf.slice(0, buf.indexOf('\r\n')));
      if (!buf.startsWith('HTTP/1.1 101')) return;
      switched = true;
      buf = buf.slice(at + 4);
    }
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    waiting.splice(0).forEach((w) => w());
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  /** The next JSON-RPC message from the daemon. */
  const next = async (): Promise<any> => {
    while (!lines.length) await new Promise<void>((r) => waiting.push(r));
    return JSON.parse(lines.shift()!);
  };
  const send = (m: unknown): boolean => socket.write(JSON.stringify(m) + '\n');
  return { socket, status, closed, next, send };
}

/** Writes a byte now and then until the daemon's reset ends `socket` (a socket the daemon still holds never ends). */
async function resetByDaemon(socket: net.Socket, closed: Promise<void>): Promise<void> {
  let done = false;
  void closed.then(() => (done = true));
  while (!done) {
    await new Promise<void>((resolve) => socket.write('\n', () => resolve()));
    await new Promise((r) => setTimeout(r, 50));
  }
}

const initialize = (id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hostile', version: '0' } },
});

t.test('a stdio message past the bound ends the connection (the host is not left waiting); the next connection is served', async (t) => {
  const d = await daemonWith(t, { a: { server: 'sdk' } });
  const c = upgrade(d, '/mcp/gateways/a/stdio', d.info.token);
  t.match(await c.status, /^HTTP\/1\.1 101 /, 'upgraded');
  const chunk = Buffer.alloc(1 << 20, 0x20);
  // 17 MiB with no newline: one message over the 16 MiB a message may be.
  for (let i = 0; i < 17; i++) c.socket.write(chunk);
  await resetByDaemon(c.socket, c.closed);
  t.pass('the daemon ended the connection');

  const again = upgrade(d, '/mcp/gateways/a/stdio', d.info.token);
  t.match(await again.status, /^HTTP\/1\.1 101 /);
  again.send(initialize());
  const r = await again.next();
  t.equal(r.id, 1, 'a new connection is answered');
  t.ok(r.result?.protocolVersion, 'initialize answered');
  again.socket.destroy();
});

t.test('a refused upgrade is closed even when the client keeps its half open; a stop ends every upgraded socket', async (t) => {
  const d = await daemonWith(t, { a: { server: 'sdk' } });
  for (const [p, token, up] of [
    ['/mcp/gateways/a/stdio', null, 'albedo-mcp-stdio'],
    ['/v1/status', d.info.token, 'websocket'],
    ['/mcp/gateways/a/stdio', d.info.token, 'websocket'],
    ['/mcp/gateways/nope/stdio', d.info.token, 'albedo-mcp-stdio'],
  ] as const) {
    const c = upgrade(d, p, token, up);
    t.match(await c.status, /^HTTP\/1\.1 4\d\d /, `${p} (${up}, ${token ? 'token' : 'no token'}) refused`);
    // The client keeps its side open: the daemon's side is gone once what it writes is reset (no one reads it any more).
    await resetByDaemon(c.socket, c.closed);
    t.pass('and closed by the daemon');
  }
  // A live stdio connection: the daemon stops (exits) all the same.
  const live = upgrade(d, '/mcp/gateways/a/stdio', d.info.token);
  t.match(await live.status, /^HTTP\/1\.1 101 /);
  live.send(initialize());
  t.equal((await live.next()).id, 1);
  t.equal(await d.stop(), 0, 'the daemon stopped with status 0');
  await resetByDaemon(live.socket, live.closed);
});

t.test('a 2025-era session keeps a bounded resumption store: old large results go, the newest stays', async (t) => {
  const d = await daemonWith(t, { a: { server: 'sdk' } });
  const url = `http://127.0.0.1:${d.info.port}/mcp/gateways/a`;
  const headers: Record<string, string> = {
    authorization: `Bearer ${d.info.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const post = async (body: unknown) => {
    const r = await request(url, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
  };
  const init = await post(initialize());
  t.equal(init.status, 200);
  headers['mcp-session-id'] = String(init.headers['mcp-session-id']);
  headers['mcp-protocol-version'] = '2025-06-18';
  t.equal((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
  // Each result is about MAX_BYTES / 2: with three of them the first cannot be kept.
  const text = 'x'.repeat(MAX_BYTES / 2);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await post({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
    t.equal(r.status, 200);
    t.ok(r.text.includes(`"id":${10 + i}`), `call ${i} answered`);
    ids.push(/^id: (.+)$/m.exec(r.text)![1]!);
  }
  const resume = async (last: string) => {
    const g: Record<string, string> = { ...headers, accept: 'text/event-stream', 'last-event-id': last };
    delete g['content-type'];
    const r = await request(url, { method: 'GET', headers: g });
    r.body.once('error', () => {});
    r.body.destroy();
    return r.statusCode;
  };
  t.equal(await resume(ids[0]!), 400, "the first call's events are no longer kept");
  t.equal(await resume(ids[2]!), 200, "the last call's are");
});

t.test("a gateway's session closed under its clients ends their connections; the next client gets a new session", async (t) => {
  const d = await daemonWith(t, { a: { server: 'sdk' } });
  const c = upgrade(d, '/mcp/gateways/a/stdio', d.info.token);
  t.match(await c.status, /^HTTP\/1\.1 101 /);
  c.send(initialize());
  t.equal((await c.next()).id, 1);
  const sessions = (await d.call('GET', '/v1/sessions')).body.sessions as Array<{ id: string; label?: string }>;
  const mine = sessions.filter((s) => s.label?.startsWith('gateway:a#'));
  t.equal(mine.length, 1, 'one session behind the gateway');
  t.equal((await d.call('DELETE', `/v1/sessions/${mine[0]!.id}`)).status, 204);
  await resetByDaemon(c.socket, c.closed);
  t.pass('the stdio client was disconnected');

  const again = upgrade(d, '/mcp/gateways/a/stdio', d.info.token);
  t.match(await again.status, /^HTTP\/1\.1 101 /);
  again.send(initialize());
  t.ok((await again.next()).result, 'a new client is answered');
  again.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  again.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'back' } } });
  const r = await again.next();
  t.equal(r.result?.content?.[0]?.text, 'back', 'and served by a new session');
  const now = (await d.call('GET', '/v1/sessions')).body.sessions as Array<{ id: string; label?: string }>;
  t.not(now.find((s) => s.label?.startsWith('gateway:a#'))?.id, mine[0]!.id, 'another session');
  again.socket.destroy();
});
