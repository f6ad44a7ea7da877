// The session gateway's HTTP tokens (`albsgw_…`) belong to the attachment they
// were handed out with, on a real daemon with the official MCP client as the
// agent: the holder's token works across its lease renewals; once the adapter
// releases the session, or another adapter takes it over after the lease ran
// out, a former agent's token (in its logs, say) is refused (401), and the new
// holder's works.
import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { NODE, fixture, newTag, tempDir, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(240_000);

const AGENT = { command: '/usr/bin/env', args: ['agent', '--acp'] };

const editorServer = (tag: string) => ({
  name: 'ed',
  command: NODE,
  args: [fixture('sdk-server.ts')],
  env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
});

/** The bearer of an attachment's HTTP gateway. */
const bearerOf = (a: any): string => String(a.gateway.headers[0].value).replace(/^Bearer /, '');

/** Whether the official MCP client, as the agent, lists the session's tools with `bearer`. */
async function lists(d: Daemon, id: string, bearer: string): Promise<boolean> {
  const c = new Client({ name: 'agent', version: '1.0.0' });
  const url = new URL(`http://127.0.0.1:${d.info.port}/mcp/sessions/${id}`);
  try {
    await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
    return (await c.listTools()).tools.some((x) => x.name.startsWith('mcp_ed_echo_'));
  } finally {
    await c.close().catch(() => {});
  }
}

/** The status a bare POST to the session's gateway gets with `bearer` (401: the guard refused it). */
const statusWith = async (d: Daemon, id: string, bearer: string): Promise<number> =>
  (await d.call('POST', `/mcp/sessions/${id}`, { token: bearer, body: {} })).status;

t.test('gateway tokens go with their attachment: released, taken over', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_ACP_LEASE_MS: '1000' } });
  t.equal((await d.call('PUT', srv('conf'), { body: sdkServer() })).status, 201, 'a configured server');
  const cwd = tempDir(t, 'acp-tokens-cwd-');
  const body = { cwd, mcpServers: [editorServer(tag)], agent: AGENT, http: true };

  const first = await d.call('POST', '/v1/acp/sessions', { body });
  t.equal(first.status, 201, first.text);
  const id = first.body.id as string;
  const tok1 = { 'albedo-attachment-token': first.body.token };
  t.equal((await d.call('PATCH', `/v1/acp/sessions/${id}`, { body: { acpSessionId: 'agent-t' }, headers: tok1 })).status, 204);
  const b1 = bearerOf(first.body);
  t.ok(await lists(d, id, b1), 'the holder’s agent lists the tools');
  // Renewed: still the holder, its token still good.
  for (let i = 0; i < 3; i++) {
    t.equal((await d.call('POST', `/v1/acp/sessions/${id}/lease`, { headers: tok1 })).status, 200, 'renewed');
  }
  t.ok(await lists(d, id, b1), 'across renewals');

  // Released: the agent it was given to is refused from now on.
  t.equal((await d.call('DELETE', `/v1/acp/sessions/${id}/attachment`, { headers: tok1 })).status, 204, 'released');
  t.equal(await statusWith(d, id, b1), 401, 'a released attachment’s gateway token is refused');

  // Another adapter attaches; its lease then runs out and a third takes the session over.
  const second = await d.call('POST', '/v1/acp/attach', { body: { ...body, acpSessionId: 'agent-t' } });
  t.match(second, { status: 200, body: { id, created: false } }, second.text);
  const b2 = bearerOf(second.body);
  t.not(b2, b1);
  t.ok(await lists(d, id, b2), 'the second holder’s agent lists the tools');
  t.equal(await statusWith(d, id, b1), 401, 'the first is still refused');
  await until(async () => (await d.call('GET', `/v1/acp/sessions/${id}`)).body?.attached === false, 60_000, 'the lease to run out');
  t.not(await statusWith(d, id, b2), 401, 'an expired lease nobody took: its agent still gets in');
  const third = await d.call('POST', '/v1/acp/attach', { body: { ...body, acpSessionId: 'agent-t' } });
  t.match(third, { status: 200, body: { id, created: false } }, third.text);
  const b3 = bearerOf(third.body);
  t.equal(await statusWith(d, id, b2), 401, 'taken over: the former holder’s gateway token is refused');
  t.ok(await lists(d, id, b3), 'the new holder’s works');
  t.equal(await statusWith(d, id, b1), 401, 'and the first’s stays refused');
  t.notOk(
    d.lines.some((l) => [b1, b2, b3].some((b) => l.includes(b))),
    'no gateway token in the log',
  );
});
