// An editor's server whose name a configured server takes while its ACP session
// runs, on a real daemon: the configured one wins (the session warns that the
// editor's is left out), and the ACP session's view says so — `shadowed`, not
// the configured server's state under the editor's name — in the API, `albedo
// status` and its `--json`. Removing the configured server brings it back.
import t from 'tap';
import { NODE, fixture, newTag, tempDir, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from '../cli/cli-harness.ts';
import { overlayStateLabel } from '../../web/shared/acp.js';

t.setTimeout(240_000);

t.test('an editor server left out for a configured one of its name is listed so', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const cwd = tempDir(t, 'acp-shadow-cwd-');
  const ed = { name: 'ed', command: NODE, args: [fixture('sdk-server.ts')], env: [{ name: 'ALBEDO_TEST_TAG', value: e.tag }] };
  const created = await d.call('POST', '/v1/acp/sessions', {
    body: { cwd, mcpServers: [ed], agent: { command: '/usr/bin/env', args: ['agent'] } },
  });
  t.equal(created.status, 201, created.text);
  const id = created.body.id as string;
  const edState = async (): Promise<string> =>
    (await d.call('GET', `/v1/acp/sessions/${id}`)).body.overlay.servers.find((s: { name: string }) => s.name === 'ed').state;
  t.match(await edState(), /^(ready|advertised)$/, 'the editor’s server runs');

  t.equal((await d.call('PUT', srv('ed'), { body: sdkServer() })).status, 201, 'a configured server of the same name');
  await until(
    async () => ((await d.call('GET', `/v1/sessions/${id}`)).body?.warnings ?? []).length > 0,
    60_000,
    'the session to take the configured one and warn',
  );
  t.equal(await edState(), 'shadowed', 'the API: left out, not the configured one’s state');
  t.equal((await d.call('GET', '/v1/acp/sessions')).body.sessions[0].overlay.servers[0].state, 'shadowed', 'in the list too');

  const json = await piped(e, ['status', '--json']);
  t.equal(json.code, 0, json.stderr);
  t.same(JSON.parse(json.stdout).acp[0].servers, [{ name: 'ed', state: 'shadowed' }], 'status --json');
  const text = await piped(e, ['status']);
  t.ok(text.stdout.includes(`ed (${overlayStateLabel('shadowed').text})`), 'status words it');
  t.not(overlayStateLabel('shadowed').text, 'shadowed', 'with a label of its own');

  t.equal((await d.call('DELETE', srv('ed'))).status, 204, 'the configured one removed');
  await until(async () => /^(ready|advertised)$/.test(await edState()), 60_000, 'the editor’s server back');
});
