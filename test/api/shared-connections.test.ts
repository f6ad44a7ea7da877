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

t.test("a server's own request goes to the session whose call caused it", async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ shared: { ...h.stdio(fixture('sdk1-server.ts')), share: true } });
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

  t.equal(text(await a.call(toolOf(a, 'shared', 'ask'), {}, { context: 'alice' })), 'hello alice');
  t.equal(text(await b.call(toolOf(b, 'shared', 'ask'), {}, { context: 'bob' })), 'hello bob');
  t.same(asked, ['alice', 'bob'], "each question went with its own call's context");

  // Two calls in flight on the shared connection: a question names neither, so it is refused, not guessed.
  asked.length = 0;
  const sleeping = b.call(toolOf(b, 'shared', 'sleep'), { ms: 3_000 }, { context: 'bob' });
  await until(() => inflight(albedo, 'transport') >= 1, 30_000, 'the sleep to be in flight');
  const r = await a.call(toolOf(a, 'shared', 'ask'), {}, { context: 'alice' });
  await sleeping;
  t.same(asked, [], 'with two calls in flight on the shared connection the owner is not asked at all');
  t.not(text(r), 'hello alice', 'and the question is not answered for alice');
  await a.close();
  await b.close();
  t.same(await waitNoLeftovers(tag), []);
});

t.test('HTTP is shared by default: one MCP session at the server for two sessions; share: false gives one each', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const srv = await httpFixture(t, tag, fixture('sdk1-http-server.ts'), ['--json']);
  const sessionsAt = (): number => new Set(srv.log.map((l) => l.session).filter(Boolean)).size;
  h.write({ remote: { url: srv.url }, solo: { url: srv.url, share: false } });
  const albedo = await albedoFor(t, tag, { home: h.dir });
  const a = await albedo.sessions.open();
  const b = await albedo.sessions.open();
  t.equal(a.connectionOf('remote'), b.connectionOf('remote'));
  t.not(a.connectionOf('solo'), b.connectionOf('solo'));
  for (const [s, n] of [
    [a, '1'],
    [b, '2'],
  ] as const) {
    t.equal(text(await s.call(toolOf(s, 'remote', 'echo'), { text: n })), n);
    t.equal(text(await s.call(toolOf(s, 'solo', 'echo'), { text: n })), n);
  }
  t.equal(sessionsAt(), 3, 'one MCP session for the shared server, one per session for the other');
  await a.close();
  await b.close();
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
