// The daemon's sessions routes (issue 11, item 2 "Sessions"), over real HTTP
// against the real `albedo daemon` process with real servers: open, list,
// show, tools, context, calls (a tool's isError is a result; errors carry
// code and outcome), activity, reload, close; the events as Server-Sent
// Events with Last-Event-ID replay; and a session that survives the daemon's
// SIGKILL (its record, under the daemon's owner, is restored by the next one).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome, until } from '../helpers.ts';
import { follow, sdkServer, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const write = (home: string, servers: Record<string, unknown>): void =>
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));

const textOf = (result: any): string => result?.content?.[0]?.text;

/** An event id: `<epoch>-<n>`. */
const ID = /^([0-9a-z]{8})-([1-9][0-9]*)$/;

t.test('open, inspect, call, activity, reload, events, close: a session over HTTP', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { sdk: sdkServer() });
  const d = await startDaemon(t, home, { tag });

  const bad = await d.call('POST', '/v1/sessions', { body: { profile: 'anthropic', nope: 1 } });
  t.equal(bad.status, 400);
  t.match(bad.body, { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'nope'] } }, 'an unknown field is named');
  const unknownProfile = await d.call('POST', '/v1/sessions', { body: { profile: 'cobol' } });
  t.match(unknownProfile, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT' } } });
  const missing = await d.call('POST', '/v1/sessions', { body: { servers: { include: ['nowhere'] } } });
  t.match(missing, { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } }, 'include names no configured server');

  const opened = await d.call('POST', '/v1/sessions', { body: { profile: 'anthropic' } });
  t.equal(opened.status, 201);
  const s = opened.body;
  t.match(s, {
    id: String,
    profile: 'anthropic',
    generation: 1,
    servers: [{ name: 'sdk', state: 'ready', advertised: true }],
    warnings: [],
  });
  t.ok(s.tools > 0);
  t.same(
    (await d.call('GET', '/v1/sessions')).body.sessions.map((x: any) => x.id),
    [s.id],
    'listed',
  );
  t.match((await d.call('GET', `/v1/sessions/${s.id}`)).body, { id: s.id, generation: 1 });

  const tools = (await d.call('GET', `/v1/sessions/${s.id}/tools`)).body;
  t.equal(tools.tools.length, s.tools);
  t.ok(
    tools.tools.every((x: any) => /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/.test(x.name)),
    'provider-safe names',
  );
  t.match(await d.call('GET', `/v1/sessions/${s.id}/tools?profile=openai`), {
    status: 400,
    body: { error: { path: ['query', 'profile'] } },
  });
  t.match((await d.call('GET', `/v1/sessions/${s.id}/context`)).body, { generation: 1, context: String });

  const echo = tools.tools.find((x: any) => x.description.startsWith('[server "sdk", tool "echo"]')).name;
  const called = await d.call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: echo, arguments: { text: 'over http' } } });
  t.equal(called.status, 200);
  t.equal(textOf(called.body.result), 'over http', 'by advertised name');
  t.equal(
    textOf((await d.call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'sdk/echo', arguments: { text: 'raw' } } })).body.result),
    'raw',
  );
  const failed = await d.call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'sdk/fail' } });
  t.match(failed, { status: 200, body: { result: { isError: true } } }, "a tool's isError is a result");
  const unknownTool = await d.call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'sdk/nothing' } });
  t.match(unknownTool, { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run' } } });
  const badArgs = await d.call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: echo, arguments: [1] } });
  t.match(badArgs, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'arguments'] } } });

  // Events: a hand edit adds a server; the session reloads and says so.
  const stream = await follow(d, s.id);
  t.equal(stream.status, 200);
  t.match(stream.contentType, /^text\/event-stream/);
  write(home, { sdk: sdkServer(), other: sdkServer() });
  await until(() => stream.events.some((e) => e.event === 'capabilities_changed'), 60_000, 'capabilities_changed');
  const changed = JSON.parse(stream.events.find((e) => e.event === 'capabilities_changed')!.data);
  t.match(changed, { generation: 2, text: /other/, servers: ['other'], changes: [{ server: 'other', change: 'added' }] });
  const ids = stream.events.map((e) => ID.exec(e.id ?? ''));
  t.ok(ids.every(Boolean), 'every event has an id <epoch>-<n>');
  t.same(new Set(ids.map((m) => m?.[1])).size, 1, 'one epoch in a stream');
  t.same(
    ids.map((m) => Number(m?.[2])),
    ids.map((_, i) => i + 1),
    'numbered 1, 2, … in the session',
  );
  await stream.close();

  // A reconnect with Last-Event-ID gets only what came after it.
  const firstId = stream.events[0]!.id!;
  const again = await follow(d, s.id, firstId);
  await until(() => again.events.length >= stream.events.length - 1, 30_000, 'the replay');
  t.same(
    again.events.slice(0, stream.events.length - 1).map((e) => e.id),
    stream.events.slice(1).map((e) => e.id),
    'the kept events after it',
  );
  await again.close();

  t.match((await d.call('POST', `/v1/sessions/${s.id}/activity`, { body: { kind: 'turn_end' } })).body, { generation: 2 });
  t.match(await d.call('POST', `/v1/sessions/${s.id}/activity`, { body: { kind: 'lunch' } }), {
    status: 400,
    body: { error: { path: ['body', 'kind'] } },
  });
  t.match(await d.call('POST', `/v1/sessions/${s.id}/reload`), { status: 200, body: { generation: 2 } });
  t.equal((await d.call('DELETE', `/v1/sessions/${s.id}`)).status, 204);
  t.match(await d.call('GET', `/v1/sessions/${s.id}`), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });
  t.same((await d.call('GET', '/v1/sessions')).body.sessions, []);
  t.equal((await d.call('GET', '/v1/sessions', { token: null })).status, 401, 'the sessions routes need the token');
});

t.test("a session survives the daemon's SIGKILL: the next daemon restores it under the same id", async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { sdk: sdkServer() });
  const d1 = await startDaemon(t, home, { tag });
  const s = (await d1.call('POST', '/v1/sessions', { body: {} })).body;
  const before = await follow(d1, s.id);
  write(home, { sdk: sdkServer(), other: sdkServer() });
  await until(() => before.events.some((e) => e.event === 'capabilities_changed'), 60_000, "the first daemon's capabilities_changed");
  const tools = (await d1.call('GET', `/v1/sessions/${s.id}/tools`)).body.tools.map((x: any) => x.name);
  const lastOfFirst = before.events.at(-1)!.id!;
  await before.close();
  t.equal(await d1.stop('SIGKILL'), 'SIGKILL');

  const d2 = await startDaemon(t, home, { tag });
  const listed = (await d2.call('GET', '/v1/sessions')).body.sessions;
  t.same(
    listed.map((x: any) => x.id),
    [s.id],
    'restored under its id',
  );
  t.same(
    (await d2.call('GET', `/v1/sessions/${s.id}/tools`)).body.tools.map((x: any) => x.name),
    tools,
    'with its tools',
  );
  const r = await d2.call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'sdk/echo', arguments: { text: 'back' } } });
  t.equal(textOf(r.body.result), 'back', 'its server was dialled again');

  // The new daemon numbers the session's events afresh under another epoch: a client resuming with the first daemon's last
  // id gets every event the new one kept, not only those numbered past it.
  write(home, { sdk: sdkServer() });
  const fresh = await follow(d2, s.id);
  await until(() => fresh.events.some((e) => e.event === 'capabilities_changed'), 60_000, "the new daemon's capabilities_changed");
  await fresh.close();
  t.not(ID.exec(fresh.events[0]!.id!)?.[1], ID.exec(lastOfFirst)?.[1], 'another epoch');
  const resumed = await follow(d2, s.id, lastOfFirst);
  await until(() => resumed.events.length >= fresh.events.length, 30_000, 'the replay after a resume across the restart');
  t.same(
    resumed.events.slice(0, fresh.events.length).map((e) => e.id),
    fresh.events.map((e) => e.id),
    'all of them, from the first',
  );
  await resumed.close();
  const garbled = await follow(d2, s.id, 'not-an-id');
  await until(() => garbled.events.length >= fresh.events.length, 30_000, 'the replay after an unparsable id');
  t.same(
    garbled.events.slice(0, fresh.events.length).map((e) => e.id),
    fresh.events.map((e) => e.id),
    'an unparsable id: all kept',
  );
  await garbled.close();
});
