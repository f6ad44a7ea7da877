// The context text kept until compaction over HTTP (issue 24, item 3), on the
// real `albedo daemon` with real servers: GET /v1/sessions/{id}/context keeps
// the text of the last compaction across a generation change (the
// capabilities_changed event says the news), POST …/compacted takes the
// current text, the routes are in /openapi.json, and a daemon killed and
// started again restores the session with the same kept text.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, newTag, tempHome, until } from '../helpers.ts';
import { entry, follow, sdkServer, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const write = (home: string, servers: Record<string, unknown>): void =>
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));

t.test('GET context keeps the text until POST compacted; a restarted daemon restores it', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { sdk: sdkServer() });
  // A second server with instructions of its own (a page of markdown), added later.
  const notes = entry(NODE, [fixture('instructions-server.ts')]);
  const d1 = await startDaemon(t, home, { tag });
  const s = (await d1.call('POST', '/v1/sessions', { body: {} })).body;
  const context = (d = d1) => d.call('GET', `/v1/sessions/${s.id}/context`);

  const opened = await context();
  t.equal(opened.status, 200);
  t.match(opened.body, { generation: 1, context: /Fixture server for Albedo tests/, contextGeneration: 1 });
  const first = opened.body.context as string;

  const stream = await follow(d1, s.id);
  write(home, { sdk: sdkServer(), notes });
  await until(() => stream.events.some((e) => e.event === 'capabilities_changed'), 60_000, 'capabilities_changed');
  await stream.close();
  const changed = JSON.parse(stream.events.find((e) => e.event === 'capabilities_changed')!.data);
  t.match(changed, { generation: 2, text: /notes/, changes: [{ server: 'notes', change: 'added' }] }, 'the news');
  t.same((await context()).body, { generation: 2, context: first, contextGeneration: 1 }, 'the context is kept');

  const compacted = await d1.call('POST', `/v1/sessions/${s.id}/compacted`);
  t.equal(compacted.status, 200);
  t.match(compacted.body, { generation: 2, context: /Notes server/, contextGeneration: 2 }, 'compacted: the current text');
  const second = compacted.body.context as string;
  t.not(second, first);
  t.same((await context()).body, compacted.body, 'GET gives it from now on');
  const again = await d1.call('POST', `/v1/sessions/${s.id}/compacted`, { body: {} });
  t.same([again.status, again.body], [200, compacted.body], 'a body of {} is taken too');
  t.match(await d1.call('POST', `/v1/sessions/${s.id}/compacted`, { body: { now: true } }), {
    status: 400,
    body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'now'] } },
  });
  t.match(await d1.call('POST', '/v1/sessions/nope/compacted'), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });
  t.match(await d1.call('GET', '/v1/sessions/nope/context'), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });

  const doc = (await d1.call('GET', '/openapi.json')).body;
  t.ok(doc.paths['/v1/sessions/{id}/compacted']?.post, 'the compacted route is documented');
  t.same(Object.keys(doc.components.schemas.SessionContext.properties), ['generation', 'context', 'contextGeneration']);

  // Generation 3 (notes leaves), then the daemon is killed: the next one restores the session with the kept text.
  write(home, { sdk: sdkServer() });
  await until(async () => (await context()).body.generation === 3, 60_000, 'the reload that removes notes');
  t.same((await context()).body, { generation: 3, context: second, contextGeneration: 2 });
  t.equal(await d1.stop('SIGKILL'), 'SIGKILL');

  const d2 = await startDaemon(t, home, { tag });
  t.same((await context(d2)).body, { generation: 3, context: second, contextGeneration: 2 }, 'restored with the kept text');
  const last = await d2.call('POST', `/v1/sessions/${s.id}/compacted`, { body: {} });
  t.same([last.status, last.body], [200, { generation: 3, context: first, contextGeneration: 3 }], 'and compacts to the current one');
  t.equal((await d2.call('DELETE', `/v1/sessions/${s.id}`)).status, 204);
});
