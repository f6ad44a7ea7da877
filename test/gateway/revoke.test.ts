// Revoking a gateway token ends the connections of that gateway that are already
// open: a 2025-era client's GET stream (which the guard checked once, when it
// opened) and a stdio connection; the guard refuses the revoked token's next request.
import t from 'tap';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, newTag, tempHome, until } from '../helpers.ts';
import { BIN, sdkServer, startDaemon } from '../daemon/harness.ts';

t.setTimeout(170_000);

t.test('a revoked token: its open stream ends, the gateway’s stdio connections end, its next request is 401', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { sdk: sdkServer() } }, gateways: { g: { server: 'sdk' } } }),
    {
      mode: 0o600,
    },
  );
  const d = await startDaemon(t, home, { tag });
  const minted = await d.call('POST', '/v1/gateways/g/tokens');
  const token = minted.body.token as string;
  const url = `http://127.0.0.1:${d.info.port}/mcp/gateways/g`;
  const headers = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'revoke-test', version: '0' } },
    }),
  });
  t.equal(init.status, 200, 'initialized with the gateway token');
  const sid = init.headers.get('mcp-session-id')!;
  await init.body?.cancel();
  const sessionHeaders = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
  await fetch(url, {
    method: 'POST',
    headers: sessionHeaders,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  const stream = await fetch(url, { method: 'GET', headers: { ...sessionHeaders, accept: 'text/event-stream' } });
  t.equal(stream.status, 200, 'the GET stream is open');
  let ended = false;
  void (async () => {
    const reader = stream.body!.getReader();
    try {
      while (!(await reader.read()).done);
    } catch {
      /* cut */
    }
    ended = true;
  })();

  // A stdio client of the same gateway (the daemon's token, through the command).
  const child = spawn(NODE, [BIN, 'gateway', 'g'], { env: { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag }, stdio: 'pipe' });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  child.stdin.write(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stdio', version: '0' } },
    }) + '\n',
  );
  await new Promise((r) => child.stdout.once('data', r));

  const revoked = await d.call('DELETE', `/v1/gateways/g/tokens/${minted.body.id}`);
  t.ok(revoked.status < 300, 'revoked');
  await until(() => ended, 30_000, 'the GET stream to end');
  t.ok(ended, 'the open stream ended');
  t.not(await exited, undefined, 'the stdio command ended with its connection');
  const after = await fetch(url, {
    method: 'POST',
    headers: sessionHeaders,
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
  });
  t.equal(after.status, 401, 'the revoked token is refused');
});
