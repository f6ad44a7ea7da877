// `albedo status` shows the ACP sessions (issue 23) against a real daemon: two
// sessions opened with the daemon's own POST /v1/acp/sessions, each with a
// real MCP server as the editor's (test/fixtures/sdk-server.ts); one stays
// attached, the other's attachment is released. Status lists each with its
// attachment, state, agent command line and the editor's servers with their
// states; the agent's words (an escape sequence, a bidirectional control) are
// shown escaped, never obeyed; `--json` has the same as `acp`, and no env
// value of an editor's server anywhere in the output.
import t from 'tap';
import { NODE, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

const SECRET = `status-acp-secret-${Math.random().toString(36).slice(2)}`;

t.test('status: the ACP sessions, attached and detached, escaped', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag });
  t.equal((await d.call('PUT', srv('conf'), { body: sdkServer() })).status, 201, 'a configured server');
  const cwd = tempDir(t, 'status-acp-cwd-');
  const editor = (name: string) => ({
    name,
    command: NODE,
    args: [fixture('sdk-server.ts')],
    env: [
      { name: 'ALBEDO_TEST_TAG', value: e.tag },
      { name: 'EDITOR_SECRET', value: SECRET },
    ],
  });
  const open = async (name: string, agent: { command: string; args: string[] }) => {
    const r = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [editor(name)], agent } });
    t.equal(r.status, 201, r.status === 201 ? 'opened' : r.text);
    return r.body as { id: string; token: string };
  };
  const held = await open('ed', { command: '/usr/bin/env', args: ['agent', '--acp'] });
  const hostile = { command: '/opt/agent\x1b]0;pwned\x07\x1b[2J', args: ['--mode', 'x\u202ey'] };
  const loose = await open('ed2', hostile);
  const released = await d.call('DELETE', `/v1/acp/sessions/${loose.id}/attachment`, {
    headers: { 'albedo-attachment-token': loose.token },
  });
  t.equal(released.status, 204, 'the second one released');

  const r = await piped(e, ['status']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^acp sessions: 2, 1 attached$/m, 'the count');
  t.match(r.stdout, /^SESSION\s+ATTACHMENT\s+STATE\s+AGENT\s+EDITOR SERVERS$/m, 'the columns');
  const row = (id: string) => r.stdout.split('\n').find((l) => l.startsWith(id)) ?? '';
  t.match(row(held.id), /^\S+\s+attached\s+ready\s+\/usr\/bin\/env agent --acp\s+ed \((connected|advertised from its saved catalogue)\)$/);
  t.match(row(loose.id), /^\S+\s+detached\s+ready\s+\/opt\/agent\\x1b\]0;pwned\\x07\\x1b\[2J --mode x\\u202ey\s+ed2 \(/, 'escaped');
  t.notOk(r.stdout.includes('\x1b') || r.stdout.includes('\x07') || r.stdout.includes('\u202e'), 'no control character obeyed');
  t.notOk(r.stdout.includes(SECRET), 'no env value');

  const js = JSON.parse((await piped(e, ['status', '--json'])).stdout);
  t.equal(js.acp.length, 2);
  const one = js.acp.find((a: any) => a.id === held.id);
  t.match(one, {
    attached: true,
    state: 'ready',
    cwd,
    editorMcp: true,
    agent: { command: '/usr/bin/env', args: ['agent', '--acp'] },
    servers: [{ name: 'ed', state: String }],
  });
  const two = js.acp.find((a: any) => a.id === loose.id);
  t.match(two, { attached: false, agent: hostile, servers: [{ name: 'ed2' }] }, 'the agent as sent, in JSON');
  t.notOk(JSON.stringify(js).includes(SECRET), 'no env value in JSON');
});

t.test('status: no ACP session, no section', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const r = await piped(e, ['status']);
  t.equal(r.code, 0, r.stderr);
  t.notMatch(r.stdout, /acp sessions/, 'nothing said');
  t.same(JSON.parse((await piped(e, ['status', '--json'])).stdout).acp, [], 'an empty list in JSON');
});
