// `albedo acp` with an agent that speaks MCP over HTTP (mcpCapabilities.http): the agent is given the session's gateway
// as an HTTP server on the daemon, with an `albsgw_` token of its own, and calls the configured and the editor's tools
// through it; the editor is still offered stdio servers only. The token opens that session's gateway and nothing else:
// not another session's, not its byte-stream form, not the API; and nothing once the session is closed. A daemon
// restart ends it (its URL and token were the daemon's): the editor's resume gives the agent the new gateway.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { call, startDaemon, type Daemon } from '../daemon/harness.ts';
import { until } from '../helpers.ts';
import { initialize, startEditor } from '../fixtures/acp/editor.ts';
import { daemonFor, editorServer, info, works } from './adapter-kit.ts';

t.setTimeout(200_000);

/** The status of an MCP initialize POSTed to `p` with `token`. */
async function initStatus(d: Daemon, p: string, token: string): Promise<number> {
  const r = await call(d.info, 'POST', p, {
    token,
    headers: { accept: 'application/json, text/event-stream' },
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1.0.0' } },
    },
  });
  return r.status;
}

t.test('an agent with mcpCapabilities.http: an HTTP gateway with a token of the session’s; its calls work', async (t) => {
  const { d, tag, home } = await daemonFor(t, 20_000);
  const log = path.join(home, 'agent.log');
  const e = startEditor(home, { ACP_AGENT_HTTP: '1', ACP_AGENT_LOG: log });
  t.teardown(() => void e.child.kill('SIGKILL'));
  const init = await initialize(e);
  t.same(init.agentCapabilities?.mcpCapabilities, { http: false, sse: false }, 'the editor is still offered stdio servers only');
  const newSession = () => e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
  const { sessionId } = await newSession();
  const { sessionId: otherSessionId } = await newSession();
  t.not(sessionId, otherSessionId);

  const sent = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((m) => m.method === 'session/new');
  const sessions: Array<{ id: string; acpSessionId: string }> = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  const idOf = (acpSessionId: string): string => sessions.find((s) => s.acpSessionId === acpSessionId)!.id;
  const [id, otherId] = [idOf(sessionId), idOf(otherSessionId)];
  const gateway = sent[0].params.mcpServers[0];
  t.equal(sent[0].params.mcpServers.length, 1, 'one MCP server for the agent');
  t.match(gateway, { type: 'http', name: 'albedo', url: `http://127.0.0.1:${d.info.port}/mcp/sessions/${id}` }, 'the session’s URL');
  const auth = gateway.headers.find((h: { name: string }) => h.name === 'Authorization')?.value as string;
  t.match(auth, /^Bearer albsgw_[A-Za-z0-9_-]{43}$/, 'a session gateway token');
  const token = auth.slice('Bearer '.length);
  t.not(token, d.info.token);
  const otherToken = sent[1].params.mcpServers[0].headers[0].value.slice('Bearer '.length) as string;
  t.not(otherToken, token, 'each session its own token');

  await works(t, e, sessionId, 'over HTTP');
  await works(t, e, otherSessionId, 'the other session over HTTP');

  t.equal(await initStatus(d, `/mcp/sessions/${id}`, token), 200, 'the token opens its session’s gateway');
  t.equal(await initStatus(d, `/mcp/sessions/${otherId}`, token), 401, 'not another session’s');
  t.equal(await initStatus(d, `/mcp/sessions/${id}/`, token), 401, 'not another spelling of the path');
  t.equal((await call(d.info, 'GET', `/mcp/sessions/${id}/stdio`, { token })).status, 401, 'not the byte-stream form');
  for (const p of ['/v1/acp/sessions', `/v1/acp/sessions/${id}`, '/v1/mcp/servers', '/v1/status']) {
    t.equal((await call(d.info, 'GET', p, { token })).status, 401, `not the API: ${p}`);
  }

  t.equal((await d.call('DELETE', `/v1/sessions/${id}`)).status < 300, true, 'the session closed');
  t.equal(await initStatus(d, `/mcp/sessions/${id}`, token), 401, 'closed: the token opens nothing');
  t.equal(await initStatus(d, `/mcp/sessions/${otherId}`, otherToken), 200, 'the other session’s token still works');
  t.equal((await info(d, otherId)).attached, true);
  e.child.stdin!.end();
  t.equal((await e.exited).code, 0);
});

t.test('an HTTP agent after a daemon restart: its old token opens nothing; the editor’s resume gives it a new gateway', async (t) => {
  const { d: first, tag, home } = await daemonFor(t, 2000);
  const log = path.join(home, 'agent.log');
  const e = startEditor(home, { ACP_AGENT_HTTP: '1', ACP_AGENT_LOG: log });
  t.teardown(() => {
    e.child.kill('SIGCONT');
    e.child.kill('SIGKILL');
  });
  await initialize(e);
  const { sessionId } = await e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
  await works(t, e, sessionId, 'before');
  const [{ id }] = (await first.call('GET', '/v1/acp/sessions')).body.sessions;
  const gateways = () =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((m) => m.params?.mcpServers)
      .map((m) => m.params.mcpServers[0]);
  const oldToken = gateways()[0].headers[0].value.slice('Bearer '.length) as string;

  e.child.kill('SIGSTOP');
  await first.stop('SIGKILL');
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_ACP_LEASE_MS: '2000' } });
  t.equal(await initStatus(d, `/mcp/sessions/${id}`, oldToken), 401, 'the old token died with the daemon');
  e.child.kill('SIGCONT');
  await until(async () => ((x) => x.attached && x.state === 'ready')(await info(d, id)), 60_000, 'the adapter to re-attach');

  await e.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
  const now = gateways().at(-1);
  t.match(now, { type: 'http', url: `http://127.0.0.1:${d.info.port}/mcp/sessions/${id}` }, 'the new daemon’s URL, the same session');
  t.not(now.headers[0].value, `Bearer ${oldToken}`, 'a new token');
  await works(t, e, sessionId, 'after the resume');
  e.child.stdin!.end();
  t.equal((await e.exited).code, 0);
});
