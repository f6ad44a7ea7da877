// A session's overlay (the editor's MCP servers, AlbedoSession.setOverlay) through the public API, end to end with the
// real pieces: extensions.json in a temp $ALBEDO_HOME read by the settings worker, real LMDB, real stdio servers (the
// official SDK's fixture and server-everything, whose get-env tool shows what the server was given). Every overlay
// server carries the test's tag in its env, so the teardown can tell that nothing outlived the test, and a unique
// secret value that must never reach a record, LMDB, an error, an event or a snapshot.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AlbedoSession, OverlayServer, SessionEvent } from '../../api/sessions.ts';
import { CatalogueStore, closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, NODE, albedoFor, fixture, newTag, rejection, taggedPids, tempDir, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

/** A stdio overlay server over a fixture, tagged, with the secret in its env. */
function ed(name: string, tag: string, secret: string, script = fixture('sdk-server.ts'), more: string[] = []): OverlayServer {
  const env = [
    { name: 'ALBEDO_TEST_TAG', value: tag },
    { name: 'OVERLAY_SECRET', value: secret },
  ];
  return { name, command: NODE, args: [script, ...more], env };
}

/** The connection id of each overlay server the snapshot names. */
const idsOf = (s: AlbedoSession, names: string[]): Array<string | undefined> => names.map((n) => s.connectionOf(n));

/** Every byte of every file under `dir` (the LMDB environment), searched for `needle`. */
function filesHold(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    const p = path.join(dir, f);
    try {
      if (readFileSync(p).includes(Buffer.from(needle))) out.push(f);
    } catch {
      // a directory
    }
  }
  return out;
}

function recorder(s: AlbedoSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  s.on((e) => events.push(e));
  return events;
}

t.test('a publication: tools under the session scheme, calls work, the env and cwd as given, nothing in the store', async (t) => {
  const tag = newTag();
  const secret = `s3cret-${randomUUID()}`;
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const work = tempDir(t, 'albedo-ws-');
  process.env.OVERLAY_NOT_INHERITED = 'daemon-only';
  t.teardown(() => delete process.env.OVERLAY_NOT_INHERITED);
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const events = recorder(s);
  t.same(s.overlay, { servers: [], digest: null, state: 'ready', editorMcp: true }, 'no overlay yet');

  const r = await s.setOverlay(work, [ed('ed', tag, secret), ed('ev', tag, secret, EVERYTHING, ['stdio'])]);
  t.match(r, { servers: ['ed', 'ev'], changed: true, state: 'ready', digest: /^[0-9a-f]{64}$/ });
  t.same(s.overlay, { servers: ['ed', 'ev'], digest: r.digest, state: 'ready', editorMcp: true }, 'the snapshot came with the answer');
  t.same(
    s.status().map((x) => [x.name, x.state]),
    [
      ['sdk', 'ready'],
      ['ed', 'ready'],
      ['ev', 'ready'],
    ],
  );
  const echo = toolOf(s, 'ed', 'echo');
  t.match(echo, /^mcp_ed_echo_[a-z0-9]+$/, "the session's usual names");
  t.equal(text(await s.call(echo, { text: 'hi' })), 'hi', 'a call by advertised name');
  t.match(await s.call('ed/add', { a: 2, b: 3 }), { structuredContent: { sum: 5 } }, 'and by server/tool');
  t.ok(
    events.some((e) => e.type === 'refreshed' && e.changes.some((c) => c.server === 'ed' && c.change === 'added')),
    'a refreshed event',
  );

  const env = JSON.parse(text(await s.call('ev/get-env', {}))) as Record<string, string>;
  t.equal(env.OVERLAY_SECRET, secret, 'the value given');
  t.equal(env.PATH, process.env.PATH, "the launcher's reduced environment");
  t.equal(env.OVERLAY_NOT_INHERITED, undefined, "nothing else of the daemon's");
  const cwds = taggedPids(tag).map((pid) => readlinkSync(`/proc/${pid}/cwd`));
  t.ok(cwds.includes(work), 'run in the cwd given');

  await s.idle();
  const store = new CatalogueStore(path.join(h.dir, 'store'));
  t.same(store.servers(), ['sdk'], "an overlay's catalogue never reaches the store");
  t.same(filesHold(path.join(h.dir, 'store'), secret), [], 'the secret is in no LMDB file');
  t.notOk(JSON.stringify(events).includes(secret), 'nor in an event');
});

t.test('refusals leave the previous overlay as it was', async (t) => {
  const tag = newTag();
  const secret = `s3cret-${randomUUID()}`;
  const h = sessionHome(t, tag);
  writeFileSync(
    path.join(h.dir, 'extensions.json'),
    JSON.stringify({
      mcp: { servers: { sdk: h.stdio(fixture('sdk-server.ts')), off: { ...h.stdio(fixture('sdk-server.ts')), enabled: false } } },
    }),
  );
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const events = recorder(s);
  const first = await s.setOverlay(work, [ed('ed', tag, secret)]);
  const before = { overlay: s.overlay, ids: idsOf(s, ['ed']), pids: taggedPids(tag).sort(), tools: s.tools().map((x) => x.name) };
  const unchanged = async (what: string): Promise<void> => {
    await s.idle();
    t.same(
      { overlay: s.overlay, ids: idsOf(s, ['ed']), pids: taggedPids(tag).sort(), tools: s.tools().map((x) => x.name) },
      before,
      `${what}: nothing changed, no process left`,
    );
  };
  const refused = async (p: Promise<unknown>, data: Record<string, unknown>, what: string): Promise<void> => {
    const err = await rejection(p);
    t.match(err, { code: 'ALBEDO_OVERLAY_FAILED', outcome: 'not_run', data }, what);
    t.notOk(JSON.stringify({ m: err.message, d: err.data }).includes(secret), `${what}: the secret is not in the error`);
    await unchanged(what);
  };

  await refused(
    s.setOverlay(work, [ed('a', tag, secret), ed('a', tag, secret)]),
    { server: 'a', reason: 'duplicate', index: 1 },
    'duplicate',
  );
  await refused(s.setOverlay(work, [ed('sdk', tag, secret)]), { server: 'sdk', reason: 'collision' }, 'a configured server');
  await refused(s.setOverlay(work, [ed('off', tag, secret)]), { server: 'off', reason: 'collision' }, 'a switched-off configured server');
  await refused(
    s.setOverlay(work, [{ ...ed('rel', tag, secret), command: 'node' }]),
    { reason: 'invalid', index: 0 },
    'a relative command',
  );
  await refused(s.setOverlay(work, [ed('..', tag, secret)]), { server: '..', reason: 'invalid' }, 'a bad name');
  await refused(s.setOverlay('relative/dir', [ed('x', tag, secret)]), { reason: 'invalid' }, 'a relative cwd');
  await refused(s.setOverlay(work, [{ ...ed('x', tag, secret), url: 'http://x' } as never]), { reason: 'invalid' }, 'an unknown key');
  await refused(
    s.setOverlay(work, [{ ...ed('x', tag, secret), command: path.join(work, 'no-such-command') }]),
    { server: 'x', reason: 'failed', code: /^ALBEDO_/ },
    'a command that does not exist',
  );
  // A server that prints its secret on stderr and exits; a good server published with it is closed again.
  const dies = { ...ed('dies', tag, secret), args: ['-e', 'console.error(process.env.OVERLAY_SECRET); process.exit(3)'] };
  await refused(s.setOverlay(work, [ed('good', tag, secret), dies]), { server: 'dies', reason: 'failed', index: 1 }, 'a failing server');
  t.notOk(JSON.stringify(events).includes(secret), 'no event holds the secret');
  t.same(s.overlay?.digest, first.digest);
});

t.test('republication: identical changes nothing, a changed server alone is replaced, [] removes', async (t) => {
  const tag = newTag();
  const secret = `s3cret-${randomUUID()}`;
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const base = taggedPids(tag).length;
  const list = [ed('a', tag, secret), ed('b', tag, secret)];
  const r1 = await s.setOverlay(work, list);
  const ids = idsOf(s, ['sdk', 'a', 'b']);
  const pids = taggedPids(tag).sort();

  const same = await s.setOverlay(work, [list[1]!, list[0]!]);
  t.same(same, { servers: ['b', 'a'], digest: r1.digest, changed: false, state: 'ready' }, 'the same overlay (in another order)');
  await s.idle();
  t.same(idsOf(s, ['sdk', 'a', 'b']), ids, 'the same connections');
  t.same(taggedPids(tag).sort(), pids, 'no new process');

  const b2 = { ...list[1]!, env: [...list[1]!.env, { name: 'MORE', value: 'x' }] };
  const r2 = await s.setOverlay(work, [list[0]!, b2]);
  t.equal(r2.changed, true);
  t.not(r2.digest, r1.digest);
  await s.idle();
  const [sdk2, a2, b2id] = idsOf(s, ['sdk', 'a', 'b']);
  t.same([sdk2, a2], [ids[0], ids[1]], 'the configured server and the unchanged one keep their connections');
  t.not(b2id, ids[2], 'the changed one has a new one');
  t.equal(text(await s.call('b/echo', { text: 'new b' })), 'new b');
  await until(() => taggedPids(tag).length === pids.length, 10_000, 'the old b to be reaped');

  const removed = await s.setOverlay(work, []);
  t.match(removed, { servers: [], changed: true, state: 'ready' });
  await s.idle();
  t.same(s.overlay, { servers: [], digest: null, state: 'ready', editorMcp: true });
  t.same(
    s.status().map((x) => x.name),
    ['sdk'],
  );
  t.equal(s.connectionOf('sdk'), ids[0], 'only the overlay servers were closed');
  await until(() => taggedPids(tag).length === base, 10_000, 'the overlay servers to be reaped');
  t.equal((await s.setOverlay(work, [])).changed, false, '[] again: nothing to do');
});

t.test('a reload that fails leaves the overlay installed, reload_pending, until a later reload succeeds', async (t) => {
  const tag = newTag();
  const secret = `s3cret-${randomUUID()}`;
  const h = sessionHome(t, tag);
  const good = { sdk: h.stdio(fixture('sdk-server.ts')) };
  h.write(good);
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const events = recorder(s);
  // The sdk server now names a credential file that does not exist: the settings resolve no more.
  h.write({ sdk: h.stdio(fixture('sdk-server.ts'), [], { MISSING: { file: path.join(h.dir, 'missing') } }) });
  await until(() => events.some((e) => e.type === 'warning' && e.code === 'ALBEDO_INVALID_CONFIG'), 30_000, 'the failed reload');

  const err = await rejection(s.setOverlay(work, [ed('ed', tag, secret)]));
  t.match(err, { code: 'ALBEDO_OVERLAY_RELOAD_FAILED', data: { servers: ['ed'], code: 'ALBEDO_INVALID_CONFIG' } });
  t.notOk(err.message.includes(secret));
  t.match(s.overlay, { servers: ['ed'], state: 'reload_pending' }, 'installed, waiting for a reload');
  t.notOk(
    s.status().some((x) => x.name === 'ed'),
    'not shown yet',
  );
  const again = await rejection(s.setOverlay(work, [ed('ed', tag, secret)]));
  t.equal(again.code, 'ALBEDO_OVERLAY_RELOAD_FAILED', 'the same overlay again tries the reload again');

  h.write(good);
  await until(() => s.overlay?.state === 'ready', 30_000, 'the overlay to be applied');
  t.equal(text(await s.call('ed/echo', { text: 'applied' })), 'applied', 'the settings reload applied it');
  t.equal((await s.setOverlay(work, [ed('ed', tag, secret)])).changed, false);
  t.notOk(JSON.stringify(events).includes(secret));
});

t.test('editor-mcp off: validated and discovered, then hidden; switched on by the settings, shown', async (t) => {
  const tag = newTag();
  const secret = `s3cret-${randomUUID()}`;
  const h = sessionHome(t, tag);
  const servers = { sdk: h.stdio(fixture('sdk-server.ts')) };
  const write = (on: boolean): void =>
    writeFileSync(path.join(h.dir, 'extensions.json'), JSON.stringify({ enabled: { 'editor-mcp': on }, mcp: { servers } }));
  write(false);
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  t.same(s.overlay, { servers: [], digest: null, state: 'ready', editorMcp: false }, "the settings' default");
  const sdkPids = taggedPids(tag);

  const err = await rejection(s.setOverlay(work, [{ ...ed('x', tag, secret), command: path.join(work, 'nope') }]));
  t.match(err, { code: 'ALBEDO_OVERLAY_FAILED', data: { reason: 'failed' } }, 'still started and discovered');
  const r = await s.setOverlay(work, [ed('ed', tag, secret)]);
  t.match(r, { servers: ['ed'], changed: true, state: 'ready' });
  await s.idle();
  t.same(s.overlay, { servers: ['ed'], digest: r.digest, state: 'ready', editorMcp: false });
  t.same(
    s.status().map((x) => x.name),
    ['sdk'],
    'hidden',
  );
  await until(() => taggedPids(tag).length === sdkPids.length, 10_000, 'its connection to be closed');

  const forced = await albedo.sessions.open({ extensions: { 'editor-mcp': true } });
  t.equal(forced.overlay?.editorMcp, true, "a session's own choice wins");
  await forced.close();

  write(true);
  await until(() => s.status().some((x) => x.name === 'ed' && x.state === 'ready'), 30_000, 'the overlay to be shown');
  t.equal(s.overlay?.editorMcp, true);
  t.equal(text(await s.call('ed/echo', { text: 'shown' })), 'shown');
});
