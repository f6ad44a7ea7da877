// The fault matrix, the daemon SIGKILLed mid-save and mid-swap (issue 25
// item 4), with ten sessions over ten real servers and calls in flight:
// the calls are cut off (never answered, never sent again), no server
// outlives the daemon, LMDB and both settings files parse, and the next
// daemon restores the sessions.
import t from 'tap';
import path from 'node:path';
import { fixture, newTag, until } from '../helpers.ts';
import { srv } from '../daemon/harness.ts';
import { readLog } from '../fixtures/composer-ports.ts';
import { SESSIONS, ownOf } from './matrix-setup.ts';
import { daemonEntry, daemonMatrix, httpCalls, killAndCheck, shapeOf } from './daemon-setup.ts';
import { allAnswer, cutOff, notResent, restart } from './daemon-rows.ts';

t.setTimeout(170_000);

const starts = (log: string): number => readLog(log).filter((e) => e.event === 'start').length;

t.test('killed mid-save (a new server being tried): the save is cut off, extensions.json is the old or the new', async (t) => {
  const m = await daemonMatrix(t, newTag());
  const before = await shapeOf(m.d, m.ids);
  const calls = await httpCalls(t, m, 20_000, 'save');
  const lateLog = path.join(m.logs, 'late.log');
  const put = m.d.call('PUT', srv('late'), { body: daemonEntry(fixture('composer-slow-server.ts'), ['5', lateLog]) }).then(
    (r) => String(r.status),
    (err: { code?: string }) => err.code ?? 'error',
  );
  await until(() => starts(lateLog) >= 1, 60_000, 'the save to start trying the server');
  const files = await killAndCheck(t, m);
  t.not(await put, '201', 'the save was not answered');
  t.comment(
    `in flight: ${(await cutOff(t, calls)).length} calls, the save: ${await put}; late saved: ${'late' in files.extensions.mcp.servers}`,
  );
  notResent(t, m, calls, 'at the kill');
  const next = await restart(t, m, before, () => true);
  await allAnswer(t, next, calls);
});

t.test('killed mid-swap (sessions reloading after a settings change): restored, the unchanged ones as they were', async (t) => {
  const m = await daemonMatrix(t, newTag());
  const before = await shapeOf(m.d, m.ids);
  const calls = await httpCalls(t, m, 20_000, 'swap');
  const slowLog = path.join(m.logs, 'c1-slow.log');
  // c1 becomes a server slow to start: the sessions composing it reload, and wait for it before their swap.
  const put = await m.d.call('PUT', srv('c1'), { body: daemonEntry(fixture('composer-slow-server.ts'), ['5', slowLog]) });
  t.ok([200, 201].includes(put.status), `the change was saved (${put.status})`);
  const trial = starts(slowLog);
  await until(() => starts(slowLog) > trial, 60_000, 'a session reload to dial the changed server');
  await killAndCheck(t, m);
  t.comment(`in flight: ${(await cutOff(t, calls)).length} calls`);
  notResent(t, m, calls, 'at the kill');
  const withC1 = (i: number): boolean => ownOf(i) === 'c1';
  const next = await restart(t, m, before, (i) => !withC1(i));
  const after = await shapeOf(next.d, m.ids);
  t.comment(JSON.stringify(after.map((s, i) => (typeof s === 'number' ? s : `${i}:g${s.generation}:${s.tools.length}`))));
  for (let i = 0; i < SESSIONS; i++) {
    if (!withC1(i)) continue;
    const s = after[i] as { generation: number; tools: string[] };
    t.ok(s.generation >= (before[i] as { generation: number }).generation, `session ${i} (c1 changed): its generation did not go back`);
    t.notOk(
      s.tools.some((n) => n.startsWith('mcp_c1_sleep')),
      `session ${i}: restored with the changed server's tools (the new settings), not a mix`,
    );
    t.ok(s.tools.some((n) => n.startsWith('mcp_c1_echo')));
  }
  await allAnswer(t, next, calls);
});
