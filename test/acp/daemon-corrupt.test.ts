// A damaged `acp-sessions.json` at a daemon's start, on real daemons: a daemon
// with an ACP session is killed outright, its record is damaged, a new daemon
// starts. It says so in its log (naming the file, quoting none of it), keeps
// the damaged file aside (`acp-sessions.json.corrupt-<time>`, 0600, as it was)
// before writing the record again, lists the session detached and unbound, and
// hands it to no attach; a record whose workspace is not known is never
// attached with whatever workspace the attach names. Everything else works.
import t, { type Test } from 'tap';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(240_000);

const AGENT = { command: '/usr/bin/env', args: ['agent', '--acp'] };
const MARK = `damaged-${Math.random().toString(36).slice(2)}`;

const editorServer = (tag: string) => ({
  name: 'ed',
  command: NODE,
  args: [fixture('sdk-server.ts')],
  env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
});

/** A daemon with a configured server and one ACP session bound to `acpSessionId`, then killed outright. */
async function killedWithSession(t: Test, acpSessionId: string) {
  const tag = newTag();
  const home = tempHome(t);
  const cwd = tempDir(t, 'acp-corrupt-cwd-');
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('conf'), { body: sdkServer() })).status, 201, 'a configured server');
  const a = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [editorServer(tag)], agent: AGENT } });
  t.equal(a.status, 201, a.text);
  const bound = await d.call('PATCH', `/v1/acp/sessions/${a.body.id}`, {
    body: { acpSessionId },
    headers: { 'albedo-attachment-token': a.body.token },
  });
  t.equal(bound.status, 204, 'bound');
  await d.stop('SIGKILL');
  return { tag, home, cwd, id: a.body.id as string, file: path.join(home, 'acp-sessions.json') };
}

/** What still works: the configured server, a new ACP session with the editor's server. */
async function stillWorks(t: Test, d: Daemon, tag: string, cwd: string, acpSessionId: string, old: string): Promise<void> {
  const servers = await d.call('GET', '/v1/mcp/servers');
  t.equal(servers.status, 200);
  t.ok(servers.text.includes('"conf"'), 'the configured server is there');
  const fresh = await d.call('POST', '/v1/acp/attach', { body: { acpSessionId, cwd, mcpServers: [editorServer(tag)], agent: AGENT } });
  t.match(fresh, { status: 201, body: { created: true, state: 'ready', overlay: { servers: ['ed'] } } }, 'a new session for the agent');
  t.not(fresh.body.id, old, 'never the damaged one');
  t.equal((await d.call('DELETE', `/v1/sessions/${old}`)).status, 204, 'the old one can be closed');
  t.equal((await d.call('GET', `/v1/acp/sessions/${old}`)).status, 404, 'and is gone');
  const record = JSON.parse(readFileSync(path.join(d.home, 'acp-sessions.json'), 'utf8'));
  t.same(Object.keys(record.sessions), [fresh.body.id], 'the record is written again, for the new session');
}

t.test('a record that does not parse: said, kept aside, the session unbound', async (t) => {
  const k = await killedWithSession(t, 'agent-c');
  const damaged = `{"sessions": {"${k.id}": {"cwd": "${MARK}`;
  writeFileSync(k.file, damaged, { mode: 0o644 });

  const d = await startDaemon(t, k.home, { tag: k.tag });
  const said = d.lines.filter((l) => l.includes('acp-sessions.json'));
  t.equal(said.length, 1, 'one line of the log names the file');
  t.notOk(
    d.lines.some((l) => l.includes(MARK)),
    'quoting nothing of it',
  );
  const aside = readdirSync(k.home).filter((n) => n.startsWith('acp-sessions.json.corrupt-'));
  t.equal(aside.length, 1, 'moved aside');
  t.equal(readFileSync(path.join(k.home, aside[0]!), 'utf8'), damaged, 'as it was');
  t.equal(statSync(path.join(k.home, aside[0]!)).mode & 0o777, 0o600, '0600');
  t.ok(said[0]!.includes(aside[0]!), 'the line says where');

  const info = await d.call('GET', `/v1/acp/sessions/${k.id}`);
  t.match(info, { status: 200, body: { id: k.id, attached: false, cwd: '' } }, 'listed, detached');
  t.notOk('acpSessionId' in info.body, 'unbound');
  t.equal((await d.call('GET', '/v1/acp/sessions')).body.sessions.length, 1, 'in the list');
  await stillWorks(t, d, k.tag, k.cwd, 'agent-c', k.id);
});

t.test('a record of the wrong shape is set aside the same way', async (t) => {
  const k = await killedWithSession(t, 'agent-s');
  writeFileSync(k.file, JSON.stringify({ sessions: [{ id: k.id, note: MARK }] }));
  const d = await startDaemon(t, k.home, { tag: k.tag });
  t.equal(d.lines.filter((l) => l.includes('acp-sessions.json')).length, 1, 'said');
  t.equal(readdirSync(k.home).filter((n) => n.startsWith('acp-sessions.json.corrupt-')).length, 1, 'moved aside');
  t.match(await d.call('GET', `/v1/acp/sessions/${k.id}`), { status: 200, body: { attached: false, cwd: '' } });
  await stillWorks(t, d, k.tag, k.cwd, 'agent-s', k.id);
});

t.test('a bound record whose workspace is not known: an attach to it is refused, whatever cwd it names', async (t) => {
  const k = await killedWithSession(t, 'agent-w');
  const doc = JSON.parse(readFileSync(k.file, 'utf8'));
  doc.sessions[k.id].cwd = '';
  writeFileSync(k.file, JSON.stringify(doc));
  const d = await startDaemon(t, k.home, { tag: k.tag });
  t.equal(readdirSync(k.home).filter((n) => n.startsWith('acp-sessions.json.corrupt-')).length, 0, 'a good record is not set aside');
  t.match(await d.call('GET', `/v1/acp/sessions/${k.id}`), { status: 200, body: { acpSessionId: 'agent-w', attached: false } });
  for (const cwd of [k.cwd, tempDir(t, 'acp-corrupt-other-')]) {
    const r = await d.call('POST', '/v1/acp/attach', {
      body: { acpSessionId: 'agent-w', cwd, mcpServers: [editorServer(k.tag)], agent: AGENT },
    });
    t.match(
      r,
      { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'], data: { reason: 'workspace_unknown' } } } },
      'refused',
    );
  }
  t.match(await d.call('GET', `/v1/acp/sessions/${k.id}`), { status: 200, body: { attached: false, cwd: '' } }, 'unchanged');
  t.equal((await d.call('DELETE', `/v1/sessions/${k.id}`)).status, 204, 'it can be closed');
});
