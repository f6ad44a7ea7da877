// Shared connections (issue 25 item 1): sessions composing a server marked
// `share` use one connection — one process, one HTTP session — while each
// keeps its own view; the last session leaving closes it; a per-session
// server gets one each; a crash of the shared process reaches every session
// holding it and each dials it again; a server's own request goes to the
// session whose call caused it. Real servers: the official SDK 1.x (legacy,
// stdio and sessionful HTTP) and 2.x, through albedo.sessions.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createAlbedo, type Albedo, type SessionInputHandler } from '../../api/albedo.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import path from 'node:path';
import { ROOT, albedoFor, fixture, httpFixture, newTag, taggedPids, tempDir, until, waitNoLeftovers } from '../helpers.ts';
import { readLog, text } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

/** The tagged processes whose command line names `script`. */
const pidsOf = (tag: string, script: string): number[] =>
  taggedPids(tag).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script);
    } catch {
      return false;
    }
  });

const inflight = (albedo: Albedo, service: string): number => albedo.kernel.slots(service as never).reduce((n, s) => n + s.inflight, 0);

t.test('two sessions, one process for a shared server, two for a per-session one; the last to leave closes it', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({
    shared: { ...h.stdio(fixture('sdk1-server.ts')), share: true },
    own: h.stdio(fixture('sdk-server.ts')),
  });
  const albedo = await albedoFor(t, tag, { home: h.dir });
  const a = await albedo.sessions.open();
  const b = await albedo.sessions.open();
  await until(() => [a, b].every((s) => s.status().every((x) => x.state === 'ready')), 30_000, 'both sessions ready');
  t.equal(pidsOf(tag, 'sdk1-server.ts').length, 1, 'one process for the shared server');
  t.equal(pidsOf(tag, 'sdk-server.ts').length, 2, 'one process per session for the other');
  t.equal(a.connectionOf('shared'), b.connectionOf('shared'), 'both name the one connection');
  t.not(a.connectionOf('own'), b.connectionOf('own'));

  t.equal(text(await a.call(toolOf(a, 'shared', 'echo'), { text: 'from a' })), 'from a');
  t.equal(text(await b.call(toolOf(b, 'shared', 'echo'), { text: 'from b' })), 'from b');
  await a.close();
  t.equal(text(await b.call(toolOf(b, 'shared', 'echo'), { text: 'still' })), 'still', 'the other session still calls');
  t.equal(pidsOf(tag, 'sdk1-server.ts').length, 1, 'the shared process stays while a session holds it');
  t.equal(pidsOf(tag, 'sdk-server.ts').length, 1, 'the closed session reaped its own');

  // A third session joins the live connection: no new process.
  const c = await albedo.sessions.open();
  await until(() => c.status().every((x) => x.state === 'ready'), 30_000, 'the third session ready');
  t.equal(pidsOf(tag, 'sdk1-server.ts').length, 1, 'a session opened later joins it');
  t.equal(c.connectionOf('shared'), b.connectionOf('shared'));
  await b.close();
  t.equal(text(await c.call(toolOf(c, 'shared', 'echo'), { text: 'joined' })), 'joined');
  await c.close();
  t.same(await waitNoLeftovers(tag), [], 'the last session leaving closed it: no process left');

  // Opened again after its close: a new process, calls go through.
  const d = await albedo.sessions.open();
  t.equal(text(await d.call(toolOf(d, 'shared', 'echo'), { text: 'again' })), 'again');
  t.equal(pidsOf(tag, 'sdk1-server.ts').length, 1);
  await d.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('a crash of the shared process reaches both sessions, and each calls again on one new process', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ shared: { ...h.stdio(fixture('sdk1-server.ts')), share: true } });
  const albedo = await albedoFor(t, tag, { home: h.dir });
  const a = await albedo.sessions.open();
  const b = await albedo.sessions.open();
  await until(() => [a, b].every((s) => s.status().every((x) => x.state === 'ready')), 30_000, 'ready');
  const seen = { a: [] as string[], b: [] as string[] };
  a.on((e) => seen.a.push(e.type));
  b.on((e) => seen.b.push(e.type));
  const [pid] = pidsOf(tag, 'sdk1-server.ts');
  process.kill(pid!, 'SIGKILL');
  await until(() => [a, b].every((s) => s.status()[0]?.state !== 'ready'), 30_000, 'both sessions to see the shared server gone');
  t.equal(text(await a.call(toolOf(a, 'shared', 'echo'), { text: 'a back' })), 'a back');
  t.equal(text(await b.call(toolOf(b, 'shared', 'echo'), { text: 'b back' })), 'b back');
  t.equal(pidsOf(tag, 'sdk1-server.ts').length, 1, 'one new process for both');
  t.equal(a.connectionOf('shared'), b.connectionOf('shared'));
  await a.close();
  await b.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test("a server's own request goes to the session whose call caused it, known by the call's HTTP stream", async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const log = path.join(h.dir, 'asks.log');
  const srv = await httpFixture(t, tag, fixture('asks-http-server.ts'), ['--log', log]);
  h.write({ shared: { url: srv.url, share: true } });
  const asked: unknown[] = [];
  const sessionInput: SessionInputHandler = async (r) => {
    asked.push(r.context);
    if (r.context === undefined) throw new AlbedoError('ALBEDO_INPUT_REQUIRED', 'whose call?', { outcome: 'not_run' });
    return { action: 'accept', content: { name: String(r.context) } };
  };
  const albedo = await createAlbedo({ home: h.dir, sessionInput });
  t.teardown(() => albedo.close());
  const caps = { elicitation: {} };
  const a = await albedo.sessions.open({ capabilities: caps });
  const b = await albedo.sessions.open({ capabilities: caps });
  t.equal(a.connectionOf('shared'), b.connectionOf('shared'), 'the same capabilities share one connection');
  const other = await albedo.sessions.open();
  t.not(other.connectionOf('shared'), a.connectionOf('shared'), 'other capabilities have a connection of their own');
  await other.close();

  t.equal(text(await a.call(toolOf(a, 'shared', 'ask_here'), {}, { context: 'alice' })), 'hello alice');
  t.equal(text(await b.call(toolOf(b, 'shared', 'ask_here'), {}, { context: 'bob' })), 'hello bob');
  // Another session's call in flight changes nothing: the question comes on the asking call's own stream.
  const sleeping = b.call(toolOf(b, 'shared', 'sleep'), { ms: 2_000 }, { context: 'bob' });
  await until(() => inflight(albedo, 'transport') >= 1, 30_000, 'the sleep to be in flight');
  t.equal(text(await a.call(toolOf(a, 'shared', 'ask_here'), {}, { context: 'alice' })), 'hello alice');
  t.same(asked, ['alice', 'bob', 'alice'], "each question went with its own call's context");

  // A question from no call (a job the server runs later), while a call of the other session is in flight: refused,
  // never asked of the session whose call happens to be running.
  asked.length = 0;
  t.equal(text(await b.call(toolOf(b, 'shared', 'later'), { who: 'bob' })), 'queued');
  const alices = a.call(toolOf(a, 'shared', 'sleep'), { ms: 1_500 }, { context: 'alice' });
  await until(() => readLog(log).length > 0, 30_000, 'the job to be answered');
  await alices;
  await sleeping;
  t.same(asked, [], 'the owner was not asked');
  t.match(String(readLog(log)[0]?.answer), /^error/, "the server's question was refused");
  await a.close();
  await b.close();
});

t.test('over stdio a 2025-era server names no call: its questions on a shared connection are refused', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ shared: { ...h.stdio(fixture('sdk1-server.ts')), share: true }, own: h.stdio(fixture('sdk1-server.ts')) });
  const asked: unknown[] = [];
  const sessionInput: SessionInputHandler = async (r) => {
    asked.push(r.connection);
    return { action: 'accept', content: { name: 'someone' } };
  };
  const albedo = await createAlbedo({ home: h.dir, sessionInput });
  t.teardown(() => albedo.close());
  const a = await albedo.sessions.open({ capabilities: { elicitation: {} } });
  t.not(text(await a.call(toolOf(a, 'shared', 'ask'), {}, { context: 'alice' })), 'hello someone', 'refused on the shared one');
  t.equal(text(await a.call(toolOf(a, 'own', 'ask'), {}, { context: 'alice' })), 'hello someone', 'asked on its own one');
  t.same(asked, [a.connectionOf('own')]);
  await a.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('HTTP shares by default only a 2026-07-28 server: a 2025-era MCP session may keep per-client state', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const legacy = await httpFixture(t, tag, fixture('asks-http-server.ts'));
  const modern = await httpFixture(t, tag, fixture('sdk-http-server.ts'), ['--mode', 'dual']);
  h.write({ legacy: { url: legacy.url }, forced: { url: legacy.url, share: true }, modern: { url: modern.url } });
  const albedo = await albedoFor(t, tag, { home: h.dir });
  // The first session finds out each server's era (and saves it); the ones after it decide by it.
  const first = await albedo.sessions.open();
  const a = await albedo.sessions.open();
  const b = await albedo.sessions.open();
  t.not(a.connectionOf('legacy'), b.connectionOf('legacy'), 'a 2025-era server: a connection each');
  t.equal(text(await a.call(toolOf(a, 'legacy', 'login'), { user: 'alice' })), 'logged in as alice');
  t.equal(text(await b.call(toolOf(b, 'legacy', 'whoami'), {})), 'nobody', "one session's login is not another's");
  t.equal(a.connectionOf('forced'), b.connectionOf('forced'), 'share: true shares it anyway');
  t.equal(a.connectionOf('modern'), b.connectionOf('modern'), 'a 2026-07-28 server: shared');
  t.not(first.connectionOf('modern'), a.connectionOf('modern'), 'the first session keeps the connection it found the era on');
  const sum = (await b.call(toolOf(b, 'modern', 'add'), { a: 2, b: 40 })) as { structuredContent?: unknown };
  t.same(sum.structuredContent, { sum: 42 });
  for (const s of [first, a, b]) await s.close();
});

t.test('a request no call caused is refused on a shared connection, asked on a per-session one', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const dir = tempDir(t, 'shared-fs-');
  const fs = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
  // server-filesystem asks the client for its roots as soon as it is initialised, when the client declares roots.
  h.write({ shared: { ...h.stdio(fs, [dir]), share: true }, solo: h.stdio(fs, [dir]) });
  const asked: Array<{ method: string; connection: string }> = [];
  const sessionInput: SessionInputHandler = async (r) => {
    asked.push({ method: r.method, connection: r.connection });
    throw new AlbedoError('ALBEDO_INPUT_REQUIRED', 'no roots here', { outcome: 'not_run' });
  };
  const albedo = await createAlbedo({ home: h.dir, sessionInput });
  t.teardown(() => albedo.close());
  const a = await albedo.sessions.open({ capabilities: { roots: {} } });
  const b = await albedo.sessions.open({ capabilities: { roots: {} } });
  await until(() => asked.filter((x) => x.method === 'roots/list').length >= 2, 30_000, 'the per-session servers to ask');
  t.equal(a.connectionOf('shared'), b.connectionOf('shared'));
  const forSolo = new Set([a.connectionOf('solo'), b.connectionOf('solo')]);
  t.ok(
    asked.every((x) => forSolo.has(x.connection)),
    'only the per-session connections asked the owner; the shared one was refused before it',
  );
  const listed = await a.call(toolOf(a, 'shared', 'list_allowed_directories'), {});
  t.match(text(listed), path.basename(dir), 'the shared server went on with the directories it was given');
  await a.close();
  await b.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('subscriptions on a shared connection are held per session: the last to unsubscribe unsubscribes', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const subs = path.join(h.dir, 'subs.log');
  h.write({ flows: { ...h.stdio(fixture('flows-server.ts'), ['--stdio', 'legacy', '--subs', subs]), share: true } });
  const albedo = await albedoFor(t, tag, { home: h.dir });
  const a = await albedo.sessions.open();
  const b = await albedo.sessions.open();
  t.equal(a.connectionOf('flows'), b.connectionOf('flows'));
  const asked = (): string[] => readLog(subs).map((l) => String(l.method));
  const uri = 'fixture://counter';
  await a.request('flows', { method: 'resources/subscribe', uri });
  await b.request('flows', { method: 'resources/subscribe', uri });
  t.same(asked(), ['resources/subscribe'], 'the server is asked once for both sessions');
  await b.request('flows', { method: 'resources/unsubscribe', uri });
  t.same(asked(), ['resources/subscribe'], 'one session leaving keeps the subscription for the other');
  await b.request('flows', { method: 'resources/unsubscribe', uri });
  t.same(asked(), ['resources/subscribe'], 'leaving twice changes nothing');
  await a.request('flows', { method: 'resources/unsubscribe', uri });
  t.same(asked(), ['resources/subscribe', 'resources/unsubscribe'], 'the last holder leaving unsubscribes');
  await a.close();
  await b.close();
});
