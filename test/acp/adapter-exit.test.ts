// How `albedo acp` ends: the agent crashing mid-prompt (the editor's request answered with an error naming it, a line
// on stderr, exit 1); the editor closing stdin (exit 0); the adapter SIGKILLed. Each time the agent's whole process
// group (the agent and the grandchild it started) is gone afterwards, as the stdio launcher ends it.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { NODE, newTag, tempHome, until } from '../helpers.ts';
import { BIN, startDaemon } from '../daemon/harness.ts';
import { alive, initialize, prompt, startEditor } from '../fixtures/acp/editor.ts';

t.setTimeout(170_000);

async function started(t: Tap, home: string) {
  const pidfile = path.join(home, `agent-${Math.random()}.pids`);
  const e = startEditor(home, { ACP_AGENT_PIDFILE: pidfile });
  t.teardown(() => void e.child.kill('SIGKILL'));
  await initialize(e);
  const { sessionId } = await e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [] });
  const pids = readFileSync(pidfile, 'utf8').split(' ').map(Number);
  t.ok(pids.every(alive), 'the agent and its grandchild run');
  return { e, sessionId, pids };
}
type Tap = Test;

t.test('the agent crashing: the prompt fails with ALBEDO_AGENT_EXITED, a line on stderr, exit 1, its group gone', async (t) => {
  const home = tempHome(t);
  await startDaemon(t, home, { tag: newTag() });
  const { e, sessionId, pids } = await started(t, home);
  const err = await prompt(e, sessionId, 'crash').then(
    () => null,
    (x: acp.RequestError) => x,
  );
  t.equal(err?.code, -32603);
  t.same(err?.data, { code: 'ALBEDO_AGENT_EXITED' });
  t.same(await e.exited, { code: 1, signal: null }, 'exit 1');
  t.ok(
    e.stderr.some((l) => l.startsWith('albedo: ALBEDO_AGENT_EXITED:') && l.includes('status 3')),
    'said on stderr',
  );
  await until(() => !pids.some(alive), 30_000, 'the agent’s group to go');
  t.pass('the agent’s group is gone');
});

t.test('the editor closing stdin: exit 0, the agent’s group gone', async (t) => {
  const home = tempHome(t);
  await startDaemon(t, home, { tag: newTag() });
  const { e, pids } = await started(t, home);
  e.child.stdin!.end();
  t.same(await e.exited, { code: 0, signal: null });
  await until(() => !pids.some(alive), 30_000, 'the agent’s group to go');
  t.pass('the agent’s group is gone');
});

t.test('the adapter SIGKILLed: the agent’s group is gone all the same', async (t) => {
  const home = tempHome(t);
  await startDaemon(t, home, { tag: newTag() });
  const { e, pids } = await started(t, home);
  e.child.kill('SIGKILL');
  t.same(await e.exited, { code: null, signal: 'SIGKILL' });
  await until(() => !pids.some(alive), 30_000, 'the agent’s group to go');
  t.pass('the agent’s group is gone');
});

t.test('an agent that cannot start: a clear error, exit 1', async (t) => {
  const home = tempHome(t);
  const r = spawnSync(NODE, [BIN, 'acp', '--', path.join(home, 'no-such-agent')], {
    env: { ...process.env, ALBEDO_HOME: home },
    input: '',
    encoding: 'utf8',
  });
  t.equal(r.status, 1);
  t.equal(r.stdout, '', 'nothing on stdout');
  t.match(r.stderr, /^albedo: ALBEDO_AGENT_EXITED: .*could not start/m);
});
