// `albedo acp` recovering from a daemon killed under it: the adapter left running, the daemon SIGKILLed and started
// again (twice), the ACP session restored detached with its overlay lost (`reattach_required`, tool calls refused with
// ALBEDO_OVERLAY_REATTACH_REQUIRED); the adapter re-attaches by itself on its next renewal with the servers the editor
// sent, and the agent's own gateway (`albedo gateway --session ID`, which outlived the daemon and connected again) calls
// both the configured and the editor's tools again, over the agent's same MCP connection. The adapter is stopped
// (SIGSTOP) while the daemon is down, so that the test's daemon, not one the adapter would start, takes the home, and
// the lost state is seen before the adapter repairs it.
// And the editor leaving mid-prompt (stdin closed): exit 0, the attachment released, the agent's group and gateway gone.
import t from 'tap';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { alive, initialize, prompt, startEditor } from '../fixtures/acp/editor.ts';
import { codeOf, daemonFor, echoes, editorOn, editorServer, info, pidsRunning, run } from './adapter-kit.ts';

t.setTimeout(240_000);

t.test('daemon SIGKILLed twice under a running adapter: reattach_required, then re-attached by the adapter, calls work', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const env = { ALBEDO_ACP_LEASE_MS: '2000' };
  let d = await startDaemon(t, home, { tag, env });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201, 'a configured server');
  const log = path.join(home, 'agent.log');
  const e = startEditor(home, { ACP_AGENT_LOG: log });
  t.teardown(() => {
    if (e.child.exitCode === null) e.child.kill('SIGCONT');
    e.child.kill('SIGKILL');
  });
  await initialize(e);
  const { sessionId } = await e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [editorServer(tag)] });
  const first = await run(e, sessionId, 'list');
  const want = first.tools.filter((n) => /^mcp_(sdk|ed)_echo_/.test(n)).sort();
  t.equal(want.length, 2, 'an echo of the configured server and of the editor’s');
  t.same(
    await echoes(e, sessionId, first.tools),
    want.map((n) => `hi ${n}`),
    'both called through the gateway',
  );
  const [acpInfo] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  const id: string = acpInfo.id;
  const gateway = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((m) => m.method === 'session/new').params.mcpServers[0];

  for (const round of [1, 2]) {
    // The adapter paused while the daemon is gone: nothing but the test starts the next one.
    e.child.kill('SIGSTOP');
    await d.stop('SIGKILL');
    d = await startDaemon(t, home, { tag, env });
    t.match(await info(d, id), { acpSessionId: sessionId, attached: false, state: 'reattach_required' }, `${round}: overlay lost`);

    // Any gateway of the session refuses calls until the editor's servers are back.
    const c = new Client({ name: 'probe', version: '1.0.0' });
    const genv = Object.fromEntries(gateway.env.map((x: { name: string; value: string }) => [x.name, x.value]));
    await c.connect(new StdioClientTransport({ command: gateway.command, args: gateway.args, env: { ...process.env, ...genv } as any }));
    const sdkEcho = want.find((n) => n.startsWith('mcp_sdk_'))!;
    const refused = (await c.callTool({ name: sdkEcho, arguments: { text: 'x' } })) as any;
    t.equal(refused._meta?.['albedo/error']?.code, 'ALBEDO_OVERLAY_REATTACH_REQUIRED', `${round}: refused, not run`);
    await c.close();

    e.child.kill('SIGCONT');
    // Attached first, then published: ready once the editor's servers run again.
    await until(
      async () => ((x) => x.attached && x.state === 'ready')(await info(d, id)),
      60_000,
      `round ${round}: the adapter to re-attach`,
    );
    t.match(await info(d, id), { id, acpSessionId: sessionId, state: 'ready', overlay: { servers: [{ name: 'ed' }] } });
    // The agent's MCP connection, made before the restarts: its gateway connected again by itself.
    const back = await run(e, sessionId, 'list');
    t.same(back.tools, first.tools, `${round}: the same tools`);
    t.same(
      await echoes(e, sessionId, back.tools),
      want.map((n) => `hi ${n}`),
      `${round}: both called again`,
    );
  }
  t.equal(e.child.exitCode, null, 'the adapter ran throughout');
  e.child.stdin!.end();
  t.same(await e.exited, { code: 0, signal: null });
  t.equal((await info(d, id)).attached, false, 'released at the end');
});

t.test('the editor closing stdin mid-prompt: exit 0, released, the agent’s group and its gateway gone', async (t) => {
  const { d, tag, home } = await daemonFor(t, 20_000);
  const pidfile = path.join(home, 'agent.pids');
  const { e, sessionId } = await editorOn(t, home, tag, undefined, { ACP_AGENT_PIDFILE: pidfile });
  const [{ id }] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  const pids = [...readFileSync(pidfile, 'utf8').split(' ').map(Number), ...pidsRunning(`--session\0${id}`)];
  t.equal(pids.length, 3, 'the agent, its grandchild and its gateway run');
  const started = path.join(home, 'prompt.started');
  const pending = codeOf(prompt(e, sessionId, `hang ${started}`));
  await until(() => existsSync(started), 30_000, 'the prompt to start');
  e.child.stdin!.end();
  t.same(await e.exited, { code: 0, signal: null }, 'exit 0');
  t.ok(await pending, 'the prompt got no answer but an error');
  await until(() => !pids.some(alive), 30_000, 'the agent’s group to go');
  t.pass('the agent, its grandchild and the gateway are gone');
  t.equal((await info(d, id)).attached, false, 'released');
});
