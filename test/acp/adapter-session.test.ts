// `albedo acp` end to end: a real daemon (a temp home with a configured MCP server), the adapter spawned as an editor
// spawns it, the scripted ACP agent behind it, and an editor-supplied stdio server. The agent sees one MCP server (the
// session's gateway) and through it both the configured and the editor's tools; prompts mark the session's turns;
// a later adapter loads or resumes the session and reaches the same tools.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { initialize, prompt, startEditor, type Editor } from '../fixtures/acp/editor.ts';

t.setTimeout(170_000);

const editorServer = (tag: string): acp.McpServer => ({
  name: 'ed',
  command: NODE,
  args: [fixture('sdk-server.ts')],
  env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
});

/** The tools the agent listed, and the echo of each server called through the gateway. */
async function callEach(t: Tap, e: Editor, sessionId: string): Promise<string[]> {
  await prompt(e, sessionId, 'list');
  const tools: string[] = e.said(sessionId).find((v) => v?.tools)?.tools ?? [];
  const echoes = tools.filter((n) => /_echo_/.test(n));
  t.equal(echoes.length, 2, 'an echo tool of each server');
  for (const name of echoes) {
    e.updates.length = 0;
    const r = await prompt(e, sessionId, `call ${name} {"text":"hi ${name}"}`);
    t.equal(r.stopReason, 'end_turn');
    const result = e.said(sessionId).find((v) => v?.result || v?.error);
    t.match(JSON.stringify(result?.result?.content), `hi ${name}`, `${name} called through the gateway`);
  }
  return tools;
}
type Tap = Test;

t.test('new session: the agent gets one gateway with the configured and the editor’s tools; load and resume reattach', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201, 'a configured server');
  const log = path.join(home, 'agent.log');
  const cwd = path.dirname(home);

  const e = startEditor(home, { ACP_AGENT_LOG: log });
  t.teardown(() => void e.child.kill('SIGKILL'));
  const init = await initialize(e);
  t.same(init.agentCapabilities?.mcpCapabilities, { http: false, sse: false }, 'the editor is offered stdio servers only');
  t.equal(init.agentCapabilities?.loadSession, true, 'the agent’s own capabilities pass through');
  t.equal((await d.call('GET', '/v1/acp/sessions')).body.sessions.length, 0, 'initialize did not reach the daemon');

  const { sessionId } = await e.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [editorServer(tag)] }).catch((err) => {
    console.error('DEBUG', err, e.stderr, d.lines);
    throw err;
  });
  const sent = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const newReq = sent.find((m) => m.method === 'session/new');
  t.equal(newReq.params.mcpServers.length, 1, 'the agent was given one MCP server');
  t.equal(newReq.params.mcpServers[0].name, 'albedo');
  t.equal(newReq.params.cwd, cwd, 'the rest of session/new as the editor sent it');

  const tools = await callEach(t, e, sessionId);
  t.ok(
    tools.some((n) => /^mcp_sdk_echo_/.test(n)),
    'a configured server’s tool',
  );
  t.ok(
    tools.some((n) => /^mcp_ed_echo_/.test(n)),
    'the editor’s server’s tool',
  );
  const listed = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  t.equal(listed.length, 1, 'one ACP session in the daemon');
  t.equal(listed[0].acpSessionId, sessionId, 'bound to the agent’s session id');
  t.equal(listed[0].attached, true);
  t.same(
    listed[0].overlay.servers.map((s: { name: string }) => s.name),
    ['ed'],
  );

  // The editor closes: the adapter exits, the attachment is given back.
  e.child.stdin!.end();
  t.same(await e.exited, { code: 0, signal: null }, 'stdin closed: exit 0');
  t.equal((await d.call('GET', `/v1/acp/sessions/${listed[0].id}`)).body.attached, false, 'released');

  for (const method of [acp.methods.agent.session.load, acp.methods.agent.session.resume] as const) {
    const e2 = startEditor(home, { ACP_AGENT_LOG: log });
    t.teardown(() => void e2.child.kill('SIGKILL'));
    await initialize(e2);
    // The agent behind this adapter is new: it learns the session on load/resume, with the gateway again.
    await e2.agent.request(method, { sessionId, cwd, mcpServers: [editorServer(tag)] });
    const again = await callEach(t, e2, sessionId);
    t.same(again, tools, `${method}: the same tools`);
    const info = (await d.call('GET', `/v1/acp/sessions/${listed[0].id}`)).body;
    t.equal(info.attached, true, `${method}: attached to the same Albedo session`);
    e2.child.stdin!.end();
    t.equal((await e2.exited).code, 0);
  }
});
