// The 4 MiB writer bound measures what already waits for the editor, not the message in hand: one message larger than
// the bound (a 5 MiB session/update) reaches an editor that reads, and the session goes on; an editor that does not
// read is cut at the next write, once more than the bound waits.
import t from 'tap';
import { spawn } from 'node:child_process';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { BoundedWriter, WRITER_BOUND } from '../../bin/acp/writer.ts';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { initialize, prompt, startEditor } from '../fixtures/acp/editor.ts';

t.setTimeout(170_000);

const MIB = 1024 * 1024;

t.test('one 5 MiB session/update reaches an editor that reads; the session goes on', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const e = startEditor(home);
  t.teardown(() => void e.child.kill('SIGKILL'));
  let exited = false;
  void e.exited.then(() => (exited = true));
  await initialize(e);
  const { sessionId } = await e.agent.request(acp.methods.agent.session.new, { cwd: path.dirname(home), mcpServers: [] });

  const r = await prompt(e, sessionId, 'big 5');
  t.equal(r.stopReason, 'end_turn', 'the turn ended');
  const big = e.said(sessionId).find((v) => typeof v === 'string' && v.length === 5 * MIB);
  t.ok(big, 'the editor received the 5 MiB update whole');
  t.ok(/^x+$/.test(big ?? ''), 'its text intact');

  e.updates.length = 0;
  const again = await prompt(e, sessionId, 'list');
  t.equal(again.stopReason, 'end_turn', 'a later prompt is answered');
  t.ok(
    e.said(sessionId).some((v) => Array.isArray(v?.tools)),
    'and its update arrives',
  );
  t.equal(exited, false, 'the adapter is still running');
  t.notOk(
    e.stderr.some((l) => /stopped reading/.test(l)),
    'no disconnection said',
  );
  const [info] = (await d.call('GET', '/v1/acp/sessions')).body.sessions;
  t.equal(info.attached, true, 'still attached');
});

t.test('the writer takes one message over the bound; it cuts once more than the bound waits behind it', async (t) => {
  // A real pipe to a process that never reads it.
  const reader = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)'], { stdio: ['pipe', 'ignore', 'ignore'] });
  t.teardown(() => void reader.kill('SIGKILL'));
  const cuts: string[] = [];
  const w = new BoundedWriter(reader.stdin!, (why) => cuts.push(why));
  w.write(new Uint8Array(5 * MIB).fill(120));
  t.same(cuts, [], 'a 5 MiB message is queued, not cut');
  t.ok(w.pending > WRITER_BOUND, 'more than the bound now waits');
  const chunk = new Uint8Array(64 * 1024).fill(120);
  let behind = 0;
  while (!w.cutReason) {
    w.write(chunk);
    if (!w.cutReason) behind += chunk.length;
  }
  t.same(cuts, ['overflow'], 'cut once, for overflow');
  t.ok(behind > WRITER_BOUND, `cut once more than the bound waited behind it (${behind} bytes)`);
  t.ok(behind <= WRITER_BOUND + chunk.length, 'and no later');
  t.ok(reader.stdin!.destroyed, 'the pipe is closed');
});
