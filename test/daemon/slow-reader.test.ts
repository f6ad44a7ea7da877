// A reader that does not keep up with a session's event stream (issue 11's
// hardening review): the daemon holds at most REPLAY_MAX events for it, then
// ends its stream (the client resumes with Last-Event-ID) instead of
// buffering without bound. The session emits many events for real: forty
// http servers nobody listens for are left out, `retryMs: 1` makes each one
// due for a come-back probe on nearly every `activity`, and each probe is a
// `server_probed` event (their long names make the events a few KiB, so the
// socket buffers between the daemon and the reader fill sooner).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { REPLAY_MAX } from '../../daemon/session-events.ts';
import { newTag, tempHome, until } from '../helpers.ts';
import { startDaemon, type Daemon } from './harness.ts';

t.setTimeout(170_000);

const SERVERS = 40;
const NAME_CHARS = 4_000;
/**
 * Events to emit while the slow reader reads nothing: with ~4 KiB each, ~40 MiB, ten times what the loopback socket buffers
 * held on the machine these tests were written on (~4 MiB), plus the REPLAY_MAX a queue may hold.
 */
const EVENTS = 10_000 + REPLAY_MAX;

async function stream(d: Daemon, id: string, lastEventId?: string) {
  const agent = new Agent();
  const headers: Record<string, string> = { authorization: `Bearer ${d.info.token}`, accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const r = await request(`http://127.0.0.1:${d.info.port}/v1/sessions/${id}/events`, { headers, dispatcher: agent });
  return { r, agent };
}

t.test('a reader that falls REPLAY_MAX events behind has its stream ended; it resumes with Last-Event-ID; others go on', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const servers: Record<string, unknown> = {};
  for (let i = 0; i < SERVERS; i++) servers[`s${i}-${'x'.repeat(NAME_CHARS)}`] = { url: 'http://127.0.0.1:1/mcp' };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { retryMs: 1, servers } }));
  const d = await startDaemon(t, home, { tag });
  const opened = await d.call('POST', '/v1/sessions', { body: {} });
  t.equal(opened.status, 201);
  const id = opened.body.id as string;
  t.ok(
    opened.body.servers.every((s: { state: string }) => s.state === 'left_out'),
    'every server left out',
  );

  // The slow reader: it has the response's headers and reads nothing more (undici stops reading the socket).
  const slow = await stream(d, id);
  t.equal(slow.r.statusCode, 200);

  // A reader that keeps up, counting what the session emits.
  const fast = await stream(d, id);
  const seen: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => seen.push(e) });
  let fastEnded = false;
  const fastDone = (async () => {
    try {
      for await (const chunk of fast.r.body) parser.feed(Buffer.from(chunk).toString('utf8'));
    } catch {
      // destroyed by the test
    }
    fastEnded = true;
  })();

  await until(
    async () => {
      const r = await d.call('POST', `/v1/sessions/${id}/activity`, { body: { kind: 'submit' } });
      if (r.status !== 200) throw new Error(`activity: ${r.status} ${r.text}`);
      return seen.length >= EVENTS;
    },
    150_000,
    `${EVENTS} events`,
  );
  t.ok(seen.filter((e) => e.event === 'server_probed').length >= EVENTS - REPLAY_MAX, "the probes' events");

  // Now the slow reader reads: what the socket buffers held, then the end of its stream.
  const got: EventSourceMessage[] = [];
  const slowParser = createParser({ onEvent: (e) => got.push(e) });
  let how = 'still open';
  const slowDone = (async () => {
    try {
      for await (const chunk of slow.r.body) slowParser.feed(Buffer.from(chunk).toString('utf8'));
      how = 'ended';
    } catch (err) {
      how = `failed: ${(err as Error).message}`;
    }
  })();
  await Promise.race([slowDone, until(() => how !== 'still open', 60_000, 'the slow stream to end').catch(() => {})]);
  t.equal(how, 'ended', "the slow reader's stream was ended by the daemon");
  if (how === 'still open') slow.r.body.destroy();
  t.ok(got.length > 0 && got.length < seen.length, `it got what was buffered for it (${got.length} of ${seen.length}), not everything`);
  t.notOk(
    got.some((e) => e.event === 'session_closed'),
    'the session did not close',
  );
  t.same(
    got.map((e) => e.id),
    seen.slice(0, got.length).map((e) => e.id),
    "what it got is the session's events in order",
  );
  t.equal((await d.call('GET', `/v1/sessions/${id}`)).status, 200, 'the session is open');
  t.notOk(fastEnded, 'the reader that kept up still streams');

  // It resumes where it stopped: the kept events after its last id (all kept ones when its id fell out).
  const resumed = await stream(d, id, got.at(-1)!.id);
  t.equal(resumed.r.statusCode, 200);
  const again: EventSourceMessage[] = [];
  const againParser = createParser({ onEvent: (e) => again.push(e) });
  const againDone = (async () => {
    try {
      for await (const chunk of resumed.r.body) againParser.feed(Buffer.from(chunk).toString('utf8'));
    } catch {
      // destroyed by the test
    }
  })();
  const last = seen.at(-1)!.id;
  await until(() => again.some((e) => e.id === last), 60_000, 'the replay up to the latest event the fast reader saw');
  t.ok(again.length <= REPLAY_MAX + SERVERS, 'the replay is the kept events');
  resumed.r.body.destroy();
  fast.r.body.destroy();
  await Promise.all([againDone, fastDone, slowDone]);
  await Promise.all([slow.agent.close(), fast.agent.close(), resumed.agent.close()]);
});
