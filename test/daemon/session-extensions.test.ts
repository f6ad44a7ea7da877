// PATCH /v1/sessions/{id} over real HTTP against the real `albedo daemon` process, with real stdio servers: a session's
// own choice of extensions changed while it is open, shown in every session answer (POST, GET, list, PATCH), refused
// with a 400 naming the field when the body is wrong, 404 for an unknown session, the previous choice kept when the
// reload fails, and the choice kept across the daemon's SIGKILL (its record restores it).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, taggedPids, tempHome, until } from '../helpers.ts';
import { sdkServer, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const write = (home: string, servers: Record<string, unknown>): void =>
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }, null, 2));

const ext = (mcp: [boolean | null, boolean], editor: [boolean | null, boolean]) => ({
  mcp: { chosen: mcp[0], effective: mcp[1] },
  'editor-mcp': { chosen: editor[0], effective: editor[1] },
});

const textOf = (result: any): string => result?.content?.[0]?.text;

t.test('PATCH changes the extensions: mcp off closes the servers, null brings them back; every answer shows them', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { sdk: sdkServer() });
  const d = await startDaemon(t, home, { tag });

  const opened = await d.call('POST', '/v1/sessions', { body: {} });
  t.equal(opened.status, 201);
  const id = opened.body.id as string;
  t.same(opened.body.extensions, ext([null, true], [null, true]), 'the open answer shows them');
  const hidden = await d.call('POST', '/v1/sessions', { body: { extensions: { 'editor-mcp': false } } });
  t.same(hidden.body.extensions, ext([null, true], [false, false]), 'editor-mcp may be chosen at open');
  t.equal((await d.call('DELETE', `/v1/sessions/${hidden.body.id}`)).status, 204);
  t.equal(taggedPids(tag).length, 1, 'the sdk server runs');

  const off = await d.call('PATCH', `/v1/sessions/${id}`, { body: { extensions: { mcp: false } } });
  t.equal(off.status, 200);
  t.match(off.body, { id, generation: 2, tools: 0, servers: [], extensions: ext([false, false], [null, false]) }, 'the DTO');
  const got = await d.call('GET', `/v1/sessions/${id}`);
  // Its lease runs from each answer (docs/api.md "Leases"): the rest is the same.
  const sameLease = (b: any) => ({ ...b, lease: { ...b.lease, expiresAt: 0 } });
  t.same(sameLease(got.body), sameLease(off.body), 'as GET answers it');
  t.same(
    (await d.call('GET', '/v1/sessions')).body.sessions.map((s: any) => s.extensions),
    [ext([false, false], [null, false])],
    'and the list',
  );
  await until(() => taggedPids(tag).length === 0, 15_000, 'the server to be reaped');
  const call = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'sdk/echo', arguments: { text: 'x' } } });
  t.equal(call.status, 404, 'no tool');

  const on = await d.call('PATCH', `/v1/sessions/${id}`, { body: { extensions: { mcp: null, 'editor-mcp': true } } });
  t.equal(on.status, 200);
  t.match(on.body, { servers: [{ name: 'sdk', advertised: true }], extensions: ext([null, true], [true, true]) });
  t.ok(on.body.tools > 0);
  const echo = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'sdk/echo', arguments: { text: 'back' } } });
  t.equal(textOf(echo.body.result), 'back');
});

t.test('bad input is a 400 naming the field; an unknown session a 404; a failed reload keeps the choice', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { sdk: sdkServer() });
  const d = await startDaemon(t, home, { tag });
  const id = (await d.call('POST', '/v1/sessions', { body: { extensions: { mcp: false } } })).body.id as string;
  const cases: Array<[unknown, Array<string | number>]> = [
    [{}, ['body', 'extensions']],
    [{ extensions: { mcp: 'yes' } }, ['body', 'extensions', 'mcp']],
    [{ extensions: { other: true } }, ['body', 'extensions', 'other']],
    [{ extensions: {}, more: 1 }, ['body', 'more']],
    [{ extensions: [] }, ['body', 'extensions']],
  ];
  for (const [body, at] of cases) {
    const r = await d.call('PATCH', `/v1/sessions/${id}`, { body });
    t.match(r, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: at } } }, JSON.stringify(body));
  }
  const unknown = await d.call('PATCH', '/v1/sessions/nope', { body: { extensions: { mcp: true } } });
  t.match(unknown, { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });

  // The sdk server now names a credential file that does not exist: a session with MCP on cannot be prepared.
  write(home, { sdk: sdkServer({ env: { MISSING: { file: path.join(home, 'missing') } } }) });
  await until(
    async () => (await d.call('POST', '/v1/sessions', { body: {} })).status === 400,
    30_000,
    'the daemon to see the broken settings',
  );
  const failed = await d.call('PATCH', `/v1/sessions/${id}`, { body: { extensions: { mcp: true } } });
  t.match(failed, { status: 400, body: { error: { code: 'ALBEDO_INVALID_CONFIG' } } }, "the reload's error");
  t.match((await d.call('GET', `/v1/sessions/${id}`)).body, { tools: 0, extensions: ext([false, false], [null, false]) }, 'unchanged');
});

t.test("the choice survives the daemon's SIGKILL: the next daemon restores the session with it", async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  write(home, { sdk: sdkServer() });
  const d1 = await startDaemon(t, home, { tag });
  const id = (await d1.call('POST', '/v1/sessions', { body: {} })).body.id as string;
  const r = await d1.call('PATCH', `/v1/sessions/${id}`, { body: { extensions: { mcp: false, 'editor-mcp': false } } });
  t.equal(r.status, 200);
  t.equal(await d1.stop('SIGKILL'), 'SIGKILL');

  const d2 = await startDaemon(t, home, { tag });
  const got = await d2.call('GET', `/v1/sessions/${id}`);
  t.match(got, { status: 200, body: { tools: 0, servers: [], extensions: ext([false, false], [false, false]) } }, 'restored with it');
  t.same(taggedPids(tag), [], 'no server started for it');
});
