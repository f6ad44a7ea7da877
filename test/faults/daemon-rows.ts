// What every daemon-kill row of the fault matrix checks once the next daemon
// is up (issue 25 item 4): the sessions the killed one left are restored under
// their ids, with the same tools and generation where nothing changed; no call
// in flight at the kill was sent again (the counted servers' logs); every
// session answers.
import type { Test } from 'tap';
import { startDaemon } from '../daemon/harness.ts';
import { COUNTED, SHARED, ownOf, timesSent } from './matrix-setup.ts';
import { shapeOf, type DaemonMatrix, type HttpLanded, type Shape } from './daemon-setup.ts';

/** The in-flight calls' ends: none answered (the daemon died under them); the caller sees the connection break. */
export async function cutOff(t: Test, calls: HttpLanded[]): Promise<string[]> {
  const ends = await Promise.all(calls.map((c) => c.result));
  t.notOk(
    ends.some((e) => e.endsWith(':200')),
    `no call in flight was answered: ${ends.join(', ')}`,
  );
  return ends;
}

/** Each counted call of `calls` reached its server at most once. */
export function notResent(t: Test, m: DaemonMatrix, calls: HttpLanded[], what: string): void {
  const counted = calls.filter((c) => c.id !== undefined);
  t.ok(
    counted.every((c) => timesSent(m.logs, c.server, c.id!) <= 1),
    `${what}: no call in flight at the kill was sent again`,
  );
}

/** Starts the next daemon; the sessions come back under their ids (`same`: with these shapes). Returns the new matrix. */
export async function restart(
  t: Test,
  m: DaemonMatrix,
  before: Array<Shape | number>,
  same: (i: number) => boolean,
): Promise<DaemonMatrix> {
  const d = await startDaemon(t, m.home, { tag: m.tag });
  const next = { ...m, d };
  const listed = (await d.call('GET', '/v1/sessions')).body.sessions.map((s: { id: string }) => s.id);
  t.same([...listed].sort(), [...m.ids].sort(), 'the next daemon restored every session under its id');
  const after = await shapeOf(d, m.ids);
  for (let i = 0; i < m.ids.length; i++) {
    if (same(i)) t.same(after[i], before[i], `session ${i}: same id, tools and generation`);
  }
  return next;
}

/** Every session answers an echo to its shared server and to its own counted one; then no call of `calls` was sent again. */
export async function allAnswer(t: Test, m: DaemonMatrix, calls: HttpLanded[]): Promise<void> {
  const asks = m.ids.flatMap((sid, i) =>
    [SHARED[i % SHARED.length]!, ownOf(i)]
      .filter((s) => (COUNTED as readonly string[]).includes(s))
      .map(async (server) => {
        const r = await m.d.call('POST', `/v1/sessions/${sid}/calls`, {
          body: { name: `${server}/echo`, arguments: { text: `after-${i}`, id: `after-${i}-${server}` } },
        });
        return r.status === 200 && r.body.result?.content?.[0]?.text === `after-${i}`;
      }),
  );
  const ok = await Promise.all(asks);
  t.ok(ok.every(Boolean), `every session answers through the next daemon (${ok.length} calls)`);
  notResent(t, m, calls, 'after the restore and new calls');
}
