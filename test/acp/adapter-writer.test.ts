// The 4 MiB bound on output waiting for the editor: an editor that stops reading while the agent streams 16 MiB of
// updates is disconnected (stdout closed), the agent's turn still runs to its end (it writes a marker file just before
// it answers, and the adapter leaves only after that answer), the attachment is given back, and the adapter exits 1.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { newTag, tempHome, until } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { alive, initialize, prompt, startEditor } from '../fixtures/acp/editor.ts';

t.setTimeout(170_000);

t.test('an editor that stops reading is cut off past 4 MiB; the turn completes; exit 1', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const pidfile = path.join(home, 'agent.pids');
  const marker = path.join(home, 'turn.done');
  const e = startEditor(home, { ACP_AGENT_PIDFILE: pidfile });
  t.teardown(() => void e.child.kill('SIGKILL'));
  await initialize(e);
  const { sessionId } = await e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [] });
  const [info] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  t.equal(info.attached, true);

  void prompt(e, sessionId, `flood 16 ${marker}`).catch(() => {});
  e.stopReading();
  t.same(await e.exited, { code: 1, signal: null }, 'exit 1');
  t.ok(existsSync(marker), 'the agent’s turn had completed when the adapter left');
  t.ok(
    e.stderr.some((l) => /stopped reading/.test(l)),
    'said on stderr',
  );
  t.equal((await d.call('GET', `/v1/acp/sessions/${info.id}`)).body.attached, false, 'the attachment was given back');
  const pids = readFileSync(pidfile, 'utf8').split(' ').map(Number);
  await until(() => !pids.some(alive), 30_000, 'the agent’s group to go');
  t.pass('the agent’s group is gone');
});
