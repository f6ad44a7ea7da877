// `albedo tools` and `albedo call` in a real terminal against the real
// daemon with a real server (issue 11, item 3): the session the command opens
// for itself is closed when it is done; --session uses an open one; a tool's
// isError exits 6, an unknown tool 4.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import pty from 'node-pty';
import { NODE, ROOT, newTag, tempHome, until } from '../helpers.ts';
import { BIN, sdkServer, startDaemon } from '../daemon/harness.ts';
import { errorCode, screenJson, term } from './cli-harness.ts';

t.setTimeout(170_000);

t.test('tools and call, with a session of their own and with --session', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  writeFileSync(path.join(e.home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } } }));
  const d = await startDaemon(t, e.home, { tag: e.tag });

  const tools = await term(e, ['tools', '--json']);
  t.equal(tools.code, 0, tools.screen);
  const listed = screenJson(tools);
  t.match(listed, { session: null, generation: 1, profile: 'portable' });
  t.ok(
    listed.tools.length > 0 &&
      listed.tools.every((x: any) => /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/.test(x.name) && typeof x.inputSchema === 'object'),
  );
  t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'the session it opened is closed');
  const human = await term(e, ['tools']);
  t.equal(human.code, 0);
  t.match(human.screen, /^mcp_sdk_echo_\w+\s+sdk\/echo\s/m, 'a line per tool, with its server and raw name');
  const anthropic = await term(e, ['tools', '--profile', 'anthropic', '--json']);
  t.equal(screenJson(anthropic).profile, 'anthropic');

  const echo = listed.tools.find((x: any) => x.description.startsWith('[server "sdk", tool "echo"]')).name;
  const byName = await term(e, ['call', echo, '--args', '{"text":"from the terminal"}', '--json']);
  t.equal(byName.code, 0, byName.screen);
  t.equal(screenJson(byName).content[0].text, 'from the terminal', 'the MCP result');
  const raw = await term(e, ['call', 'sdk/echo', '--args', '{"text":"raw name"}']);
  t.equal(raw.code, 0);
  t.equal(raw.screen.trim(), 'raw name', 'its text, for a person');
  const failed = await term(e, ['call', 'sdk/fail', '--json']);
  t.equal(failed.code, 6, 'the tool reported an error');
  t.equal(screenJson(failed).isError, true);
  const unknown = await term(e, ['call', 'sdk/nothing']);
  t.equal(unknown.code, 4);
  t.equal(errorCode(unknown.screen), 'ALBEDO_NOT_FOUND');
  t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session left behind by call');

  const open = await d.call('POST', '/v1/sessions', { body: { profile: 'openai' } });
  const id = open.body.id as string;
  const inSession = await term(e, ['tools', '--session', id, '--json']);
  t.equal(inSession.code, 0);
  t.match(screenJson(inSession), { session: id, profile: 'openai', generation: 1 });
  t.equal(screenJson(inSession).tools.length, open.body.tools);
  const wrongProfile = await term(e, ['tools', '--session', id, '--profile', 'gemini']);
  t.equal(wrongProfile.code, 2, "a profile other than the session's is refused by the daemon");
  const called = await term(e, ['call', 'sdk/echo', '--session', id, '--args', '{"text":"in session"}', '--json']);
  t.equal(screenJson(called).content[0].text, 'in session');
  t.same(
    (await d.call('GET', '/v1/sessions')).body.sessions.map((s: any) => s.id),
    [id],
    'a given session is left open',
  );
  const none = await term(e, ['call', 'sdk/echo', '--session', 'no-such-session']);
  t.equal(none.code, 4);
});

t.test('Ctrl-C during a call: the session the command opened is closed before it exits', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  writeFileSync(path.join(e.home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } } }));
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const p = pty.spawn(NODE, [BIN, 'call', 'sdk/sleep', '--args', '{"ms":120000}'], {
    cols: 200,
    rows: 30,
    cwd: ROOT,
    env: { ...process.env, ALBEDO_HOME: e.home } as Record<string, string>,
  });
  const exited = new Promise<number>((r) => p.onExit(({ exitCode }) => r(exitCode)));
  await until(async () => (await d.call('GET', '/v1/sessions')).body.sessions.length === 1, 60_000, "the call's session to open");
  // The call is in flight once the session is open and a moment has passed; the close cancels it either way.
  await new Promise((r) => setTimeout(r, 500));
  p.write('\x03');
  t.equal(await exited, 130, 'exit 130');
  t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session left open');
});
