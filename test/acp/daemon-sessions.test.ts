// ACP sessions on a real daemon (loopback, temp home), with real MCP servers as
// the editor's (test/fixtures/sdk-server.ts) and the official MCP client on the
// session gateway: an ACP session serves the configured and the editor's tools
// as one MCP server, in its stdio form (`albedo gateway --session ID`, exactly
// as the attachment names it) and its HTTP form (a token of its own that opens
// nothing else); one attachment at a time, freed when its lease runs out, the
// old token then lost; the editor's secret in no file, log line or answer; only
// the attachment changes the overlay, anyone with the daemon's token reads.
import t, { type Test } from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { NODE, filesHolding, fixture, newTag, tempDir, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(240_000);

const SECRET = `editor-secret-${Math.random().toString(36).slice(2)}-value`;

/** The editor's stdio server as ACP v1 spells it: an sdk-server with a secret in its env (and the test's tag). */
const editorServer = (tag: string, name = 'ed') => ({
  name,
  command: NODE,
  args: [fixture('sdk-server.ts')],
  env: [
    { name: 'ALBEDO_TEST_TAG', value: tag },
    { name: 'EDITOR_SECRET', value: SECRET },
  ],
});

/** The status line answering an upgrade of `p` with `token` (the socket then closed). */
function upgradeStatus(d: Daemon, p: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: d.info.port, host: '127.0.0.1' });
    socket.write(
      `GET ${p} HTTP/1.1\r\nhost: 127.0.0.1:${d.info.port}\r\nconnection: Upgrade\r\nupgrade: albedo-mcp-stdio\r\n` +
        `authorization: Bearer ${token}\r\n\r\n`,
    );
    let buf = '';
    socket.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      const at = buf.indexOf('\r\n');
      if (at < 0) return;
      resolve(buf.slice(0, at));
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

const stdioClient = async (gateway: any): Promise<Client> => {
  const env = Object.fromEntries(gateway.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  const c = new Client({ name: 'agent', version: '1.0.0' });
  await c.connect(new StdioClientTransport({ command: gateway.command, args: gateway.args, env }));
  return c;
};

const httpClient = async (gateway: any): Promise<Client> => {
  const headers = Object.fromEntries(gateway.headers.map((h: { name: string; value: string }) => [h.name, h.value]));
  const c = new Client({ name: 'agent', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: { headers } }));
  return c;
};

/** The session's name of `server`'s `tool` (mcp_SERVER_TOOL_HASH). */
const toolOf = (names: string[], server: string, tool: string): string => {
  const n = names.find((x) => x.startsWith(`mcp_${server}_${tool}_`) && !x.slice(`mcp_${server}_${tool}_`.length).includes('_'));
  if (!n) throw new Error(`no ${server} ${tool} in ${names.join(', ')}`);
  return n;
};

async function configured(t: Test, env: Record<string, string> = {}): Promise<{ d: Daemon; tag: string; home: string; cwd: string }> {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag, env });
  const put = await d.call('PUT', srv('conf'), { body: sdkServer() });
  t.equal(put.status, 201, 'a configured server');
  return { d, tag, home, cwd: tempDir(t, 'acp-cwd-') };
}

const AGENT = { command: '/usr/bin/env', args: ['agent', '--acp'] };

t.test('an ACP session: both gateway forms, one attachment at a time, leases, no secret anywhere', async (t) => {
  const { d, tag, home, cwd } = await configured(t, { ALBEDO_ACP_LEASE_MS: '4000' });
  const created = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [editorServer(tag)], agent: AGENT } });
  t.equal(created.status, 201, created.text);
  const a = created.body;
  t.match(a, { id: String, token: /^albatt_/, leaseMs: 4000, renewMs: 1000, state: 'ready', overlay: { servers: ['ed'] } });
  t.same(a.gateway.args.slice(1), ['gateway', '--session', a.id], 'the stdio form: albedo gateway --session ID');
  t.ok(path.isAbsolute(a.gateway.command) && path.isAbsolute(a.gateway.args[0]), 'absolute node and CLI');
  t.same(a.gateway.env, [{ name: 'ALBEDO_HOME', value: home }]);

  // The stdio form, run as the agent would run it: configured and editor tools, both called.
  const c1 = await stdioClient(a.gateway);
  const names = (await c1.listTools()).tools.map((x) => x.name);
  const edEcho = toolOf(names, 'ed', 'echo');
  const confAdd = toolOf(names, 'conf', 'add');
  const r1 = (await c1.callTool({ name: edEcho, arguments: { text: 'from the editor server' } })) as any;
  t.equal(r1.content[0].text, 'from the editor server', "the editor's server answered through the gateway");
  const r2 = (await c1.callTool({ name: confAdd, arguments: { a: 2, b: 3 } })) as any;
  t.equal(r2.content[0].text, '5', 'the configured server too');
  await c1.close();

  const tok = { 'albedo-attachment-token': a.token };
  const bound = await d.call('PATCH', `/v1/acp/sessions/${a.id}`, { body: { acpSessionId: 'agent-1' }, headers: tok });
  t.equal(bound.status, 204, bound.text);

  // Only the attachment changes the overlay: no token is a 400 at the header, a wrong one is lost.
  const none = await d.call('PUT', `/v1/acp/sessions/${a.id}/overlay`, { body: { mcpServers: [] } });
  t.match(none, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['headers', 'albedo-attachment-token'] } } });
  const wrong = await d.call('PUT', `/v1/acp/sessions/${a.id}/overlay`, {
    body: { mcpServers: [] },
    headers: { 'albedo-attachment-token': 'albatt_wrong' },
  });
  t.match(wrong, { status: 409, body: { error: { code: 'ALBEDO_ATTACHMENT_LOST' } } });

  // A competing attach while the lease is live (just renewed).
  const renewed = await d.call('POST', `/v1/acp/sessions/${a.id}/lease`, { headers: tok });
  t.match(renewed, { status: 200, body: { leaseMs: 4000, renewMs: 1000, state: 'ready' } });
  const attachBody = { acpSessionId: 'agent-1', cwd, mcpServers: [editorServer(tag)], agent: AGENT, http: true };
  const held = await d.call('POST', '/v1/acp/attach', { body: attachBody });
  t.match(held, { status: 409, body: { error: { code: 'ALBEDO_ATTACHMENT_HELD' } } });
  const elsewhere = await d.call('POST', '/v1/acp/attach', { body: { ...attachBody, cwd: tempDir(t, 'acp-elsewhere-') } });
  t.match(elsewhere, { status: 400, body: { error: { path: ['body', 'cwd'] } } }, 'another workspace');

  // The lease runs out (no renewal): a second attach takes the session, the first token is lost.
  await until(async () => (await d.call('GET', `/v1/acp/sessions/${a.id}`)).body?.attached === false, 60_000, 'the lease ran out');
  const second = await d.call('POST', '/v1/acp/attach', { body: attachBody });
  t.equal(second.status, 200, second.text);
  t.match(second.body, { id: a.id, created: false, state: 'ready', overlay: { servers: ['ed'] } });
  t.not(second.body.token, a.token);
  const lost = await d.call('POST', `/v1/acp/sessions/${a.id}/lease`, { headers: tok });
  t.match(lost, { status: 409, body: { error: { code: 'ALBEDO_ATTACHMENT_LOST' } } });
  const lostRelease = await d.call('DELETE', `/v1/acp/sessions/${a.id}/attachment`, { headers: tok });
  t.match(lostRelease, { status: 409, body: { error: { code: 'ALBEDO_ATTACHMENT_LOST' } } });

  // The HTTP form: its own token, valid on this session's gateway and nowhere else.
  const gw = second.body.gateway;
  t.match(gw, { type: 'http', name: 'albedo', url: `http://127.0.0.1:${d.info.port}/mcp/sessions/${a.id}` });
  const bearer = gw.headers[0].value.replace(/^Bearer /, '');
  const c2 = await httpClient(gw);
  const r3 = (await c2.callTool({ name: edEcho, arguments: { text: 'over http' } })) as any;
  t.equal(r3.content[0].text, 'over http', 'called over the HTTP form');
  await c2.close();
  for (const [method, p] of [
    ['GET', '/v1/sessions'],
    ['GET', '/v1/acp/sessions'],
    ['GET', `/v1/acp/sessions/${a.id}`],
    ['DELETE', `/v1/sessions/${a.id}`],
    ['POST', `/mcp/sessions/00000000-0000-4000-8000-000000000000`],
    ['POST', '/mcp/gateways/x'],
    ['POST', '/mcp'],
  ] as const) {
    const r = await d.call(method, p, { token: bearer, body: {} });
    t.equal(r.status, 401, `the session gateway token opens nothing else: ${method} ${p}`);
  }
  t.match(await upgradeStatus(d, `/mcp/sessions/${a.id}/stdio`, bearer), /^HTTP\/1\.1 401 /, 'nor the stdio upgrade');
  t.match(await upgradeStatus(d, `/mcp/sessions/${a.id}/stdio`, d.info.token), /^HTTP\/1\.1 101 /, "the daemon's token upgrades");

  // Reads are anyone's with the daemon's token: names and states, never a value or a token.
  const list = await d.call('GET', '/v1/acp/sessions');
  t.equal(list.status, 200);
  t.match(list.body.sessions, [{ id: a.id, acpSessionId: 'agent-1', cwd, agent: AGENT, attached: true, state: 'ready' }]);
  t.same(
    list.body.sessions[0].overlay.servers.map((s: { name: string }) => s.name),
    ['ed'],
  );
  const release = await d.call('DELETE', `/v1/acp/sessions/${a.id}/attachment`, {
    headers: { 'albedo-attachment-token': second.body.token },
  });
  t.equal(release.status, 204);
  t.equal((await d.call('GET', `/v1/acp/sessions/${a.id}`)).body.attached, false, 'released');

  const answers = [created, bound, renewed, held, second, list].map((r) => r.text.replace(a.token, '').replace(second.body.token, ''));
  for (const text of answers) t.notOk(text.includes(SECRET), 'no env value in an answer');
  t.notOk(list.text.includes(a.token) || list.text.includes(second.body.token) || list.text.includes(bearer), 'no token in GET');
  t.same(filesHolding(home, SECRET), [], "the editor's secret is in none of the daemon's files");
  for (const secret of [a.token, second.body.token, bearer]) t.same(filesHolding(home, secret), [], 'nor any token');
  t.notOk(
    d.lines.some((l) => l.includes(SECRET) || l.includes(bearer) || l.includes(a.token)),
    'nor in its log',
  );

  // Anyone with the daemon's token may close it: the session and its gateway go.
  t.equal((await d.call('DELETE', `/v1/sessions/${a.id}`)).status, 204);
  await until(async () => (await d.call('GET', `/v1/acp/sessions/${a.id}`)).status === 404, 10_000, 'gone');
  t.equal((await d.call('POST', `/mcp/sessions/${a.id}`, { body: {}, token: bearer })).status, 401, 'its gateway token went with it');
  t.equal((await d.call('POST', `/mcp/sessions/${a.id}`, { body: {} })).status, 404, 'and its gateway');
});

t.test('refusals: a failing editor server, an HTTP one, a collision, a bad body; nothing of the daemon changed', async (t) => {
  const { d, tag, home, cwd } = await configured(t);
  const file = (n: string): Buffer | null => {
    try {
      return readFileSync(path.join(home, n));
    } catch {
      return null;
    }
  };
  const before = { ext: file('extensions.json'), creds: file('creds.json') };
  const failing = {
    name: 'broken',
    command: NODE,
    args: ['-e', 'process.exit(3)'],
    env: [
      { name: 'ALBEDO_TEST_TAG', value: tag },
      { name: 'EDITOR_SECRET', value: SECRET },
    ],
  };
  const post = (mcpServers: unknown[], extra: Record<string, unknown> = {}) =>
    d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers, agent: AGENT, ...extra } });

  const failed = await post([editorServer(tag), failing]);
  t.match(failed, {
    status: 409,
    body: { error: { code: 'ALBEDO_OVERLAY_FAILED', path: ['body', 'mcpServers', 1], data: { server: 'broken', reason: 'failed' } } },
  });
  t.notOk(failed.text.includes(SECRET), 'no secret in the refusal');
  const http = await post([{ type: 'http', name: 'remote', url: 'http://127.0.0.1:9/mcp', headers: [] }]);
  t.match(http, {
    status: 409,
    body: { error: { code: 'ALBEDO_OVERLAY_FAILED', path: ['body', 'mcpServers', 0], data: { reason: 'unsupported' } } },
  });
  const collision = await post([editorServer(tag, 'conf')]);
  t.match(collision, { status: 409, body: { error: { code: 'ALBEDO_OVERLAY_FAILED', data: { server: 'conf', reason: 'collision' } } } });
  const relative = await post([], { cwd: 'relative/dir' });
  t.match(relative, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'] } } });
  const noAgent = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [] } });
  t.match(noAgent, { status: 400, body: { error: { path: ['body', 'agent'] } } });

  t.same(file('extensions.json'), before.ext, 'extensions.json unchanged, byte for byte');
  t.same(file('creds.json'), before.creds, 'creds.json unchanged');
  t.same((await d.call('GET', '/v1/acp/sessions')).body.sessions, [], 'no ACP session left');
  const open = (await d.call('GET', '/v1/sessions')).body.sessions as Array<{ label?: string }>;
  t.notOk(
    open.some((s) => s.label?.startsWith('acp:')),
    'every refused session closed',
  );
  t.same(filesHolding(home, SECRET), [], 'no secret in a file');
  t.notOk(
    d.lines.some((l) => l.includes(SECRET)),
    'nor in the log',
  );
});

t.test('a restarted daemon: the session detached, its calls refused until an attach publishes again', async (t) => {
  const { d, tag, home, cwd } = await configured(t);
  const a = (await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [editorServer(tag)], agent: AGENT } })).body;
  t.ok(a?.id, 'created');
  t.equal(
    (
      await d.call('PATCH', `/v1/acp/sessions/${a.id}`, {
        body: { acpSessionId: 'agent-9' },
        headers: { 'albedo-attachment-token': a.token },
      })
    ).status,
    204,
  );
  await d.stop('SIGKILL');

  const d2 = await startDaemon(t, home, { tag });
  const info = await d2.call('GET', `/v1/acp/sessions/${a.id}`);
  t.match(info, { status: 200, body: { id: a.id, acpSessionId: 'agent-9', attached: false, state: 'reattach_required' } });
  const lease = await d2.call('POST', `/v1/acp/sessions/${a.id}/lease`, { headers: { 'albedo-attachment-token': a.token } });
  t.match(lease, { status: 409, body: { error: { code: 'ALBEDO_ATTACHMENT_LOST' } } }, 'the old attachment is gone');

  const c = await stdioClient(a.gateway);
  const names = (await c.listTools()).tools.map((x) => x.name);
  const confAdd = toolOf(names, 'conf', 'add');
  const refused = (await c.callTool({ name: confAdd, arguments: { a: 1, b: 1 } })) as any;
  t.equal(refused.isError, true, 'refused');
  t.equal(refused._meta?.['albedo/error']?.code, 'ALBEDO_OVERLAY_REATTACH_REQUIRED', 'not run: the overlay must come back first');
  const viaApi = await d2.call('POST', `/v1/sessions/${a.id}/calls`, { body: { name: confAdd, arguments: { a: 1, b: 1 } } });
  t.match(viaApi, { status: 409, body: { error: { code: 'ALBEDO_OVERLAY_REATTACH_REQUIRED' } } }, 'through the API as well');

  const again = await d2.call('POST', '/v1/acp/attach', {
    body: { acpSessionId: 'agent-9', cwd, mcpServers: [editorServer(tag)], agent: AGENT },
  });
  t.match(again, { status: 200, body: { id: a.id, created: false, state: 'ready' } });
  await until(async () => (await c.listTools()).tools.some((x) => x.name.startsWith('mcp_ed_echo_')), 30_000, 'ed back');
  const edEcho = toolOf(
    (await c.listTools()).tools.map((x) => x.name),
    'ed',
    'echo',
  );
  const r = (await c.callTool({ name: edEcho, arguments: { text: 'back' } })) as any;
  t.equal(r.content[0].text, 'back', 'calls work again');
  const r2 = (await c.callTool({ name: confAdd, arguments: { a: 1, b: 1 } })) as any;
  t.equal(r2.content[0].text, '2');
  await c.close();
  t.same(filesHolding(home, SECRET), [], 'no secret in a file after the restart either');
});

t.test('reload pending: a publication installed while the settings are broken refuses calls until a reload succeeds', async (t) => {
  const { d, tag, home, cwd } = await configured(t);
  const a = (await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [editorServer(tag)], agent: AGENT } })).body;
  t.ok(a?.id, 'created');
  const tok = { 'albedo-attachment-token': a.token };
  const c = await stdioClient(a.gateway);
  const confAdd = toolOf(
    (await c.listTools()).tools.map((x) => x.name),
    'conf',
    'add',
  );
  const file = path.join(home, 'extensions.json');
  const good = readFileSync(file);
  // The configured server now names a credential file that does not exist: the settings resolve no more, reloads fail.
  const doc = JSON.parse(good.toString('utf8'));
  doc.mcp.servers.conf.env = { ...doc.mcp.servers.conf.env, MISSING: { file: path.join(home, 'missing') } };
  writeFileSync(file, JSON.stringify(doc));
  await until(async () => (await d.call('POST', `/v1/sessions/${a.id}/reload`)).status !== 200, 30_000, 'the settings to be broken');
  const put = await d.call('PUT', `/v1/acp/sessions/${a.id}/overlay`, {
    body: { mcpServers: [editorServer(tag), editorServer(tag, 'ed2')] },
    headers: tok,
  });
  t.match(put, { status: 503, body: { error: { code: 'ALBEDO_OVERLAY_RELOAD_FAILED' } } });
  t.equal((await d.call('GET', `/v1/acp/sessions/${a.id}`)).body.state, 'reload_pending');
  t.match(
    await d.call('POST', `/v1/acp/sessions/${a.id}/lease`, { headers: tok }),
    { status: 200, body: { state: 'reload_pending' } },
    'the lease says it',
  );
  const refused = (await c.callTool({ name: confAdd, arguments: { a: 1, b: 2 } })) as any;
  t.equal(refused._meta?.['albedo/error']?.code, 'ALBEDO_OVERLAY_RELOAD_PENDING', 'not run while the reload is pending');
  writeFileSync(file, good);
  // Published again, identical, once the settings read well: the reload runs and the state is ready.
  let same: Awaited<ReturnType<Daemon['call']>> | undefined;
  await until(
    async () => {
      same = await d.call('PUT', `/v1/acp/sessions/${a.id}/overlay`, {
        body: { mcpServers: [editorServer(tag), editorServer(tag, 'ed2')] },
        headers: tok,
      });
      return same.status !== 503;
    },
    30_000,
    'the settings to read well again',
  );
  t.match(same, { status: 200, body: { state: 'ready', overlay: { servers: [{ name: 'ed' }, { name: 'ed2' }] } } }, 'reconciled');
  const r = (await c.callTool({ name: confAdd, arguments: { a: 1, b: 2 } })) as any;
  t.equal(r.content[0].text, '3', 'calls run again');
  await c.close();
});
