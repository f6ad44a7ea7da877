// The /mcp screen's ACP sessions view (issue 23): `a` lists the daemon's ACP
// sessions (GET /v1/acp/sessions) — here two opened with the daemon's own
// POST /v1/acp/sessions, real MCP servers as the editor's, one attached and one
// released — with each one's attachment, state and agent command line, and the
// selected one's ids, workspace, editor-mcp and editor's servers with their
// states. The agent's words (an OSC title sequence, a clear-screen, a
// bidirectional control) are shown escaped, never obeyed; a release made while
// the view is open shows (read again); esc goes back.
import t from 'tap';
import { NODE, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { openScreen } from './screen-harness.ts';

t.setTimeout(170_000);

t.test('a: the ACP sessions, attached or not, escaped', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201);
  const cwd = tempDir(t, 'acp-view-cwd-');
  const editor = (name: string) => ({
    name,
    command: NODE,
    args: [fixture('sdk-server.ts')],
    env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
  });
  const open = async (names: string[], agent: { command: string; args: string[] }) => {
    const r = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: names.map(editor), agent } });
    t.equal(r.status, 201, r.status === 201 ? 'an ACP session' : r.text);
    return r.body as { id: string; token: string };
  };
  const one = await open(['ed', 'notes'], { command: '/usr/bin/env', args: ['agent', '--acp'] });
  const two = await open([], { command: '/opt/agent\x1b]0;pwned\x07\x1b[2J', args: ['x\u202ey'] });
  const tok = (a: { token: string }) => ({ 'albedo-attachment-token': a.token });
  t.equal((await d.call('PATCH', `/v1/acp/sessions/${one.id}`, { body: { acpSessionId: 'agent-sess-1' }, headers: tok(one) })).status, 204);
  t.equal((await d.call('DELETE', `/v1/acp/sessions/${two.id}/attachment`, { headers: tok(two) })).status, 204, 'two released');

  const s = openScreen(t, { home, cols: 120 });
  await s.waitFor(/^ › sdk /m);
  t.match(s.text(), /a ACP/, 'the list names the key');
  s.type('a');
  await s.waitFor('ACP sessions  2, 1 attached');
  await s.waitFor(/^ {3}SESSION\s+ATTACHMENT\s+STATE\s+AGENT$/m);
  const row = (id: string) => s.lines().find((l) => l.slice(3, 11) === id.slice(0, 8)) ?? '';
  t.match(row(one.id), /^ [› ] \S{8}\s+● attached\s+● ready\s+\/usr\/bin\/env agent --acp$/, 'attached, ready, the agent');
  t.match(row(two.id), /^ [› ] \S{8}\s+○ detached\s+● ready\s+\/opt\/agent\\x1b\]0;pwned\\x07\\x1b\[2J x\\u202ey$/, 'escaped');
  t.notOk(s.everShown('\x1b]0;pwned') || s.everShown('\u202e'), 'the agent’s control characters never reached the terminal');

  // The selected one (the first listed): its ids, workspace, editor-mcp, the editor's servers and their states.
  const first = s
    .lines()
    .find((l) => l.startsWith(' › '))!
    .slice(3, 11);
  if (first !== one.id.slice(0, 8)) s.type('j');
  await s.waitFor(new RegExp(`^ › ${one.id.slice(0, 8)}`, 'm'));
  await s.waitFor(`${one.id}  agent session agent-sess-1`);
  t.match(s.text(), new RegExp(`^ workspace ${cwd.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'), 'its workspace');
  t.match(s.text(), /^ editor-mcp ● on$/m);
  t.match(s.text(), /^ {3}ed\s+● (connected|advertised from its saved catalogue)$/m, "an editor's server and its state");
  t.match(s.text(), /^ {3}notes\s+● /m);

  // Released while the view is open: shown on the next read.
  t.equal((await d.call('DELETE', `/v1/acp/sessions/${one.id}/attachment`, { headers: tok(one) })).status, 204);
  await s.waitFor('ACP sessions  2, 0 attached');
  await s.waitFor(/^ › \S{8}\s+○ detached/m);

  s.press('esc');
  await s.waitFor(/^ {3}NAME\s+TYPE\s+STATE\s+TOOLS\s+SIGN-IN\s+PROBLEM$/m);
  s.type('q');
  t.equal(await s.exited, 0);
});

t.test('a with no ACP session: the view says how one is made', async (t) => {
  const home = tempHome(t);
  await startDaemon(t, home, { tag: newTag() });
  const s = openScreen(t, { home });
  await s.waitFor('No servers configured yet');
  s.type('a');
  await s.waitFor('No ACP session. An editor opens one through albedo acp -- AGENT');
  s.type('q');
  t.equal(await s.exited, 0);
});
