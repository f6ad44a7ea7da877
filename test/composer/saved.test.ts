// Sessions over saved catalogues (docs/design.md, "Saved catalogues"), with
// the real transport, real LMDB and real servers: the first session dials
// during preparation and saves; a session of a new Albedo advertises at once
// from the saved catalogues, before any server has answered, and a call that
// arrives first waits for the background dial. Calls route tools, resources
// and prompts; a tool's isError is a result.
import t from 'tap';
import path from 'node:path';
import { createAlbedo } from '../../api/albedo.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, albedoFor, fixture, newTag, rejection, server, tempHome, waitNoLeftovers } from '../helpers.ts';
import { FakeClock, FakeSettings, Recorder, composerFor, entry, readLog, statusOf, text, toolsOf } from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

t.test('a new Albedo advertises from saved catalogues before any server answers; the first call waits for the dial', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const slowLog = path.join(home, 'slow.log');
  const settings = new FakeSettings([
    entry('slow', server(tag, fixture('composer-slow-server.ts'), ['3', slowLog])),
    entry('sdk', server(tag, fixture('sdk-server.ts'))),
  ]);
  const clock = new FakeClock();

  // The first session: nothing saved, so both servers are dialled during preparation.
  const a1 = await createAlbedo({ home, transportWorkers: 1 });
  const first = composerFor(t, a1, settings, clock);
  const rec1 = new Recorder();
  const s1 = await first.composer.open({}, rec1.listener);
  t.same(rec1.states('slow'), ['starting', 'ready'], 'no saved catalogue: starting, then ready');
  t.same(rec1.states('sdk'), ['starting', 'ready']);
  t.equal(readLog(slowLog).filter((e) => e.event === 'answering').length, 1, 'the preparation waited for the slow server');
  const names = s1.tools().map((x) => x.name);
  t.ok(toolsOf(s1, 'slow').length === 1 && toolsOf(s1, 'sdk').length > 3, 'both servers advertised');
  await s1.idle();
  t.ok(first.store.current('slow', settings.servers_[0].fingerprint), 'the discovery was saved under the fingerprint');
  await s1.close();
  t.same(await waitNoLeftovers(tag), [], 'closing the session reaped its servers');
  await first.composer.close();
  await a1.close();

  // A new Albedo, the same home: advertised at once from LMDB.
  const a2 = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const second = composerFor(t, a2, settings, clock);
  const rec2 = new Recorder();
  const s2 = await second.composer.open({}, rec2.listener);
  t.equal(readLog(slowLog).filter((e) => e.event === 'answering').length, 1, 'the new slow server has not answered anything yet');
  t.same(
    s2.tools().map((x) => x.name),
    names,
    'the same tools, under the same names',
  );
  t.equal(statusOf(s2, 'slow').state, 'advertised', 'advertised while its dial runs');
  t.equal(statusOf(s2, 'slow').advertised, true);
  t.match(s2.context(), /Slow to start/, 'its instructions are in the context from the saved catalogue');

  const r = await s2.call('slow/echo', { text: 'first' });
  t.equal(text(r), 'first', 'a call that arrived first waited for the background dial');
  t.equal(readLog(slowLog).filter((e) => e.event === 'answering').length, 2, 'and the new server answered it');
  t.equal(statusOf(s2, 'slow').state, 'ready');
  await s2.idle();
  t.equal(statusOf(s2, 'sdk').state, 'ready', 'the other background dial finished too');
  t.same(rec2.states('slow'), ['advertised', 'ready']);

  // The background discoveries equal the saved ones: nothing happens.
  await s2.activity('turn_end');
  t.equal(s2.generation, 1, 'no new generation');
  t.same(rec2.of('refreshed'), [], 'no refresh, no new prompt');
  t.same(
    s2.status().map((x) => x.pending),
    [false, false],
  );
});

t.test('calls: tools, read_resource, get_prompt, isError as a result, bad arguments and unknown names as not run', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const settings = new FakeSettings([
    entry('sdk', server(tag, fixture('sdk-server.ts'))),
    entry('everything', server(tag, EVERYTHING, ['stdio'])),
  ]);
  const { composer } = composerFor(t, a, settings, new FakeClock());
  const s = await composer.open();
  const sdk = toolsOf(s, 'sdk');
  const read = sdk.find((n) => n.startsWith('mcp_sdk_read_resource_'))!;
  const prompt = sdk.find((n) => n.startsWith('mcp_sdk_get_prompt_'))!;
  t.ok(read && prompt, 'the resources and prompts are one operation each');
  const echoName = sdk.find((n) => n.startsWith('mcp_sdk_echo_'))!;

  t.equal(text(await s.call(echoName, { text: 'by name' })), 'by name', 'an advertised name');
  t.equal(text(await s.call('sdk/add', { a: 2, b: 3 })), '5', 'server/tool');
  const fail = (await s.call('sdk/fail', {})) as { isError?: boolean };
  t.equal(fail.isError, true, "a tool's isError is a result, not an exception");
  const res = (await s.call(read, { uri: 'fixture://readme' })) as { contents: Array<{ text: string }> };
  t.equal(res.contents[0].text, 'hello from the fixture', 'read_resource goes to resources/read');
  const got = (await s.call(prompt, { name: 'greet', arguments: { name: 'Ada' } })) as { messages: Array<{ content: { text: string } }> };
  t.equal(got.messages[0].content.text, 'Hello, Ada!', 'get_prompt goes to prompts/get');
  const everything = await s.call('everything/echo', { message: 'hi' });
  t.match(text(everything), /hi/, 'server-everything through the session');

  for (const [name, args] of [
    [read, {}],
    [prompt, { name: 'greet', arguments: { name: 7 } }],
    ['sdk/echo', 'not an object'],
  ] as const) {
    const e = await rejection(s.call(name, args));
    t.equal(e.code, 'ALBEDO_INVALID_ARGUMENT');
    t.equal(e.outcome, 'not_run');
  }
  const unknown = await rejection(s.call('sdk/no_such_tool', {}));
  t.equal(unknown.code, 'ALBEDO_NOT_FOUND');
  t.equal(unknown.outcome, 'not_run');
  t.equal((unknown.data as { server: string }).server, 'sdk');
  const bad = await rejection(s.call('sdk/echo', {}, { timeoutMs: -1 }));
  t.equal(bad.code, 'ALBEDO_INVALID_ARGUMENT');
  await s.close();
  const closed = await rejection(s.call('sdk/echo', { text: 'x' }));
  t.equal(closed.code, 'ALBEDO_CLOSED');
  t.same(await waitNoLeftovers(tag), [], 'close reaped every server');
});

t.test('a call waiting for the background dial gives up after startupTimeoutMs + callTimeoutMs, as not run', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const slowLog = path.join(home, 'slow.log');
  const slow = entry('slow', server(tag, fixture('composer-slow-server.ts'), ['5', slowLog]));
  const settings = new FakeSettings([slow]);
  const a = await albedoFor(t, tag, { home, transportWorkers: 1 });
  const { composer } = composerFor(t, a, settings, new FakeClock());
  await (await composer.open()).close();

  // The session's budget for this server: 1 s to start plus 1 s per call; the transport's own dial keeps going.
  settings.replace({ ...slow, startupTimeoutMs: 1_000, callTimeoutMs: 1_000 });
  const s = await composer.open();
  const e = await rejection(s.call('slow/echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  t.equal(e.outcome, 'not_run', 'the call gave up before it was sent');
  t.match(e.data, { server: 'slow', unavailable: true });
  t.equal(readLog(slowLog).filter((x) => x.event === 'answering').length, 1, 'the new server had not answered yet');
  await s.idle();
  t.equal(statusOf(s, 'slow').state, 'ready', 'the background dial went on and finished');
  t.equal(text(await s.call('slow/echo', { text: 'later' })), 'later');
  await s.close();
  t.same(await waitNoLeftovers(tag), []);
});
