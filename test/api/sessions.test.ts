// albedo.sessions through the public API (issue 15, item 4), end to end with
// the real pieces: extensions.json in a temp $ALBEDO_HOME read by the settings
// worker, the saved catalogues in real LMDB, the real schema normaliser, real
// servers (the official SDKs' and server-everything). Every server carries the
// test's tag in its environment through a `{ file }` secret (extensions.json
// names secrets, never inlines them), so albedoFor's teardown can tell that
// nothing outlived the test.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createAlbedo } from '../../api/albedo.ts';
import type { AlbedoSession, SessionEvent } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, albedoFor, fixture, newTag, rejection, taggedPids, until, waitNoLeftovers } from '../helpers.ts';
import { readLog, text } from '../fixtures/composer-ports.ts';
import { sessionHome as home, toolOf } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

const NAME_RULE = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;

const serversOf = (s: AlbedoSession): string[] =>
  s
    .status()
    .filter((x) => x.advertised)
    .map((x) => x.name);

function recorder(s: AlbedoSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  s.on((e) => events.push(e));
  return events;
}

t.test('open: provider-safe names, calls by name and by server/tool, renamed properties restored, list and close', async (t) => {
  const tag = newTag();
  const h = home(t, tag);
  h.write({
    sdk: h.stdio(fixture('sdk-server.ts')),
    sdk1: h.stdio(fixture('sdk1-server.ts')),
    everything: h.stdio(EVERYTHING, ['stdio']),
    odd: h.stdio(fixture('odd-names-server.ts')),
  });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  t.same(albedo.sessions.list(), [s], 'listed');
  t.same(
    s.status().map((x) => [x.name, x.state]),
    [
      ['sdk', 'ready'],
      ['sdk1', 'ready'],
      ['everything', 'ready'],
      ['odd', 'ready'],
    ],
  );
  const tools = s.tools();
  t.ok(tools.length > 10, `${tools.length} tools advertised`);
  t.same(
    tools.filter((x) => !NAME_RULE.test(x.name)).map((x) => x.name),
    [],
    "every name matches the providers' rule",
  );
  t.equal(new Set(tools.map((x) => x.name)).size, tools.length, 'names are unique');
  t.match(s.context(), /Fixture server for Albedo tests/, "the context carries the servers' instructions");

  t.equal(text(await s.call(toolOf(s, 'sdk', 'echo'), { text: 'by name' })), 'by name', 'a call by advertised name');
  t.match(await s.call('sdk/add', { a: 2, b: 3 }), { structuredContent: { sum: 5 } }, 'a call by server/tool');
  t.equal(text(await s.call('everything/echo', { message: 'hi' })), 'Echo: hi', 'server-everything through server/tool');
  t.match(await s.call('sdk1/echo', { text: 'legacy sdk' }), { content: [{ text: /legacy sdk/ }] }, 'the 1.x SDK server');
  t.match(await s.call('sdk/fail'), { isError: true }, "a tool's isError is a result");

  // The portable profile renames `my-arg` and `filter.id`; the server still receives its own names.
  const odd = tools.find((x) => x.name === toolOf(s, 'odd', 'lookup'))!;
  t.same(Object.keys(odd.inputSchema.properties as object).sort(), ['filter_id', 'my_arg'], 'the model sees provider-safe property names');
  const got = JSON.parse(text(await s.call(odd.name, { my_arg: 'x', filter_id: 'y' })));
  t.same(got, { 'my-arg': 'x', 'filter.id': 'y' }, 'the server received its own property names');
  const raw = JSON.parse(text(await s.call('odd/lookup', { my_arg: 'z' })));
  t.same(raw, { 'my-arg': 'z' }, 'through server/tool as well');

  const unknown = await rejection(s.call('nope'));
  t.match(unknown, { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run' });
  t.match(await rejection(s.call('sdk/echo', 'not an object')), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });

  const other = await albedo.sessions.open({ servers: { include: ['sdk'] }, profile: 'anthropic' });
  t.same(serversOf(other), ['sdk'], 'include chooses the servers');
  t.same(albedo.sessions.list(), [s, other]);
  const off = await albedo.sessions.open({ extensions: { mcp: false } });
  t.same(off.tools(), [], 'mcp off: no tools');
  await off.close();
  await other.close();
  t.same(albedo.sessions.list(), [s], 'a closed session leaves the list');

  t.match(await rejection(albedo.sessions.open({ profile: 'nope' })), { code: 'ALBEDO_INVALID_ARGUMENT' });
  t.match(await rejection(albedo.sessions.open({ servers: { include: ['absent'] } })), { code: 'ALBEDO_NOT_FOUND' });
  t.match(await rejection(albedo.sessions.open({ bogus: true } as never)), { code: 'ALBEDO_INVALID_ARGUMENT' });

  await albedo.close();
  t.same(albedo.sessions.list(), [], 'albedo.close() closed every session');
  t.match(await rejection(s.call('sdk/echo', { text: 'x' })), { code: 'ALBEDO_CLOSED', outcome: 'not_run' });
  t.match(await rejection(albedo.sessions.open()), { code: 'ALBEDO_CLOSED' });
  t.same(await waitNoLeftovers(tag), [], 'and reaped every server');
});

t.test('without a home, sessions are unavailable', async (t) => {
  const albedo = await albedoFor(t, newTag(), { home: null });
  t.match(await rejection(albedo.sessions.open()), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });
  t.same(albedo.sessions.list(), []);
});

t.test('a new Albedo advertises from the saved catalogues before any server answers', async (t) => {
  const tag = newTag();
  const h = home(t, tag);
  const slowLog = path.join(h.dir, 'slow.log');
  h.write({ slow: h.stdio(fixture('composer-slow-server.ts'), ['3', slowLog]), sdk: h.stdio(fixture('sdk-server.ts')) });
  const answered = (): number => readLog(slowLog).filter((e) => e.event === 'answering').length;

  const a1 = await createAlbedo({ home: h.dir, transportWorkers: 1 });
  const s1 = await a1.sessions.open();
  t.equal(answered(), 1, 'nothing saved yet: the preparation waited for the slow server');
  const names = s1.tools().map((x) => x.name);
  await a1.close();
  t.same(await waitNoLeftovers(tag), [], 'the first instance reaped its servers');

  const a2 = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s2 = await a2.sessions.open();
  t.equal(answered(), 1, 'the new slow server has not answered anything yet');
  t.same(
    s2.tools().map((x) => x.name),
    names,
    'the same tools under the same names, from LMDB',
  );
  t.ok(
    s2.tools().some((x) => x.name === toolOf(s2, 'slow', 'echo')),
    "the slow server's tool is advertised",
  );
  t.match(
    s2.status().find((x) => x.name === 'slow'),
    { state: 'advertised', advertised: true },
  );
  t.match(s2.context(), /Slow to start/, 'its instructions come from the saved catalogue');
  t.equal(text(await s2.call('slow/echo', { text: 'first' })), 'first', 'a call that came first waited for the background dial');
  t.equal(answered(), 2);
});

t.test('hand edits reach open sessions; a broken edit keeps the previous composition', async (t) => {
  const tag = newTag();
  const h = home(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const events = recorder(s);
  t.same(serversOf(s), ['sdk']);

  // Adding a server by hand: settings/changed reloads the session, which advertises it.
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')), odd: h.stdio(fixture('odd-names-server.ts')) });
  await until(() => events.some((e) => e.type === 'refreshed' && e.servers.includes('odd')), 30_000, 'the reload after the edit');
  t.same(serversOf(s), ['sdk', 'odd'], 'the added server joined');
  t.equal(s.generation, 2);
  const refreshed = events.find((e) => e.type === 'refreshed');
  t.match(refreshed, { type: 'refreshed', generation: 2, text: /odd/ }, 'with the "capabilities changed" text');
  t.same(JSON.parse(text(await s.call('odd/lookup', { my_arg: 'a' }))), { 'my-arg': 'a' });
  const tools = JSON.stringify(s.tools());

  // A file that is not JSON: the settings in force stay, the session says so, a reload keeps everything.
  writeFileSync(path.join(h.dir, 'extensions.json'), '{ "mcp": { "servers": ');
  await until(() => events.some((e) => e.type === 'warning' && e.code === 'ALBEDO_INVALID_CONFIG'), 30_000, 'the invalid-file warning');
  await s.reload();
  t.equal(JSON.stringify(s.tools()), tools, 'a reload over a broken file keeps the composition');
  t.equal(s.generation, 2);

  // A valid file whose new server cannot be resolved: the triggered reload fails and keeps the composition.
  const before = events.length;
  h.write({
    sdk: h.stdio(fixture('sdk-server.ts')),
    odd: h.stdio(fixture('odd-names-server.ts')),
    bad: h.stdio(fixture('sdk-server.ts'), [], { TOKEN: { env: 'ALBEDO_TEST_SURELY_UNSET_VARIABLE' } }),
  });
  await until(
    () => events.slice(before).some((e) => e.type === 'warning' && e.code === 'ALBEDO_INVALID_CONFIG'),
    30_000,
    'the failed reload',
  );
  t.equal(JSON.stringify(s.tools()), tools, 'the failed reload kept the composition');
  t.same(
    s.status().map((x) => x.name),
    ['sdk', 'odd'],
  );
  const e = await rejection(s.reload());
  t.match(e, { code: 'ALBEDO_INVALID_CONFIG', outcome: 'not_run', data: { issues: [{ server: 'bad', reason: 'missing_env' }] } });
  t.equal(text(await s.call('sdk/echo', { text: 'still' })), 'still', 'the session keeps serving');
});

t.test('a missing environment variable fails the preparation, naming the server', async (t) => {
  const tag = newTag();
  const h = home(t, tag);
  h.write({
    sdk: h.stdio(fixture('sdk-server.ts')),
    'needs-env': h.stdio(fixture('sdk-server.ts'), [], { API_KEY: { env: 'ALBEDO_TEST_SURELY_UNSET_VARIABLE' } }),
  });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const e = await rejection(albedo.sessions.open());
  t.match(e, {
    code: 'ALBEDO_INVALID_CONFIG',
    outcome: 'not_run',
    data: { issues: [{ server: 'needs-env', path: ['env', 'API_KEY'], reason: 'missing_env' }] },
  });
  t.notOk(JSON.stringify(e.data).includes(tag), 'no secret value in the error');
  t.same(albedo.sessions.list(), [], 'no session');
  t.same(await waitNoLeftovers(tag), [], 'nothing was started');
  const only = await albedo.sessions.open({ servers: { exclude: ['needs-env'] } });
  t.same(serversOf(only), ['sdk'], 'a session that leaves it out opens');
});

t.test('close during a reload: nothing the reload opened outlives the session', async (t) => {
  const tag = newTag();
  const h = home(t, tag);
  h.write({ a: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  // Each offset closes at a different point of the reload's preparation (the window the review found).
  for (const offset of [0, 1, 3, 10, 'immediate'] as const) {
    const s = await albedo.sessions.open();
    h.write({ a: h.stdio(fixture('sdk-server.ts')), [`b${String(offset)}`]: h.stdio(fixture('sdk1-server.ts')) });
    const reloaded = s.reload().then(
      () => 'swapped',
      (e: { code?: string }) => e.code ?? 'failed',
    );
    if (offset === 'immediate') await new Promise((r) => setImmediate(r));
    else for (let i = 0; i < offset; i++) await Promise.resolve();
    await s.close();
    t.same(taggedPids(tag), [], `offset ${offset}: every server of the session is reaped when close() resolves`);
    t.ok(['swapped', 'ALBEDO_CLOSED'].includes(await reloaded), `offset ${offset}: the reload swapped or was refused as closed`);
    h.write({ a: h.stdio(fixture('sdk-server.ts')) });
  }
});
