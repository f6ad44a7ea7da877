// A session's own choice of extensions changed while it is open (AlbedoSession.setExtensions, the composer's
// `session/extensions`), end to end with the real pieces: extensions.json in a temp $ALBEDO_HOME read by the settings
// worker, real LMDB records, real stdio servers (the official SDK's fixture) as configured servers and as an overlay.
// Every server carries the test's tag, so the tests see which processes run and that nothing outlives them.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import type { Albedo } from '../../api/albedo.ts';
import type { AlbedoSession, OverlayServer, SessionEvent } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { NODE, albedoFor, fixture, newTag, rejection, taggedPids, tempDir, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

const ed = (name: string, tag: string): OverlayServer => ({
  name,
  command: NODE,
  args: [fixture('sdk-server.ts')],
  env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
});

const ext = (mcp: [boolean | null, boolean], editor: [boolean | null, boolean]) => ({
  mcp: { chosen: mcp[0], effective: mcp[1] },
  'editor-mcp': { chosen: editor[0], effective: editor[1] },
});

const names = (s: AlbedoSession): string[] => s.status().map((x) => x.name);

function recorder(s: AlbedoSession): SessionEvent[] {
  const events: SessionEvent[] = [];
  s.on((e) => events.push(e));
  return events;
}

/** The session records as LMDB holds them (the environment closed after the read). */
async function records(home: string): Promise<Array<{ id: string; options: Record<string, unknown> }>> {
  const env = open({ path: path.join(home, 'store'), maxDbs: 16, readOnly: true });
  try {
    return [...env.openDB({ name: 'mcp_sessions' }).getRange()].map((x) => x.value) as never;
  } finally {
    await env.close();
  }
}

function restarted(albedo: Albedo, service: string): Promise<void> {
  return new Promise((resolve) => {
    const off = albedo.kernel.on('kernel', 'service/restarted', (e) => {
      if (e.service === service) {
        off();
        resolve();
      }
    });
  });
}

t.test('mcp off: every connection closes, every tool goes; null: back to the default, everything back', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  await s.setOverlay(work, [ed('ed', tag)]);
  t.same(s.extensions, ext([null, true], [null, true]), 'opened without a choice: the defaults, both on');
  t.equal(taggedPids(tag).length, 2);
  const events = recorder(s);
  const gen = s.generation;

  const off = await s.setExtensions({ mcp: false });
  t.same(off, ext([false, false], [null, false]), 'mcp off; editor-mcp not in force without it');
  t.same(s.extensions, off, 'the snapshot came with the answer');
  t.same([s.tools(), names(s), s.generation], [[], [], gen + 1], 'no tool, no server, a new generation');
  const refreshed = events.find((e) => e.type === 'refreshed');
  t.match(
    refreshed,
    {
      changes: [
        { server: 'sdk', change: 'removed' },
        { server: 'ed', change: 'removed' },
      ],
    },
    'the model is told',
  );
  await until(() => taggedPids(tag).length === 0, 10_000, 'every server to be reaped');
  t.match(await rejection(s.call('sdk/echo', { text: 'x' })), { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run' });
  t.match(s.overlay, { servers: ['ed'], state: 'ready' }, 'the overlay stays installed');

  const back = await s.setExtensions({ mcp: null });
  t.same(back, ext([null, true], [null, true]), "the settings' default again");
  t.same(names(s), ['sdk', 'ed']);
  t.equal(text(await s.call('sdk/echo', { text: 'a' })), 'a');
  t.equal(text(await s.call('ed/echo', { text: 'b' })), 'b', 'the overlay is shown again');
  t.same(await s.setExtensions({}), back, 'an empty change changes nothing');
});

t.test('editor-mcp off hides the overlay only (its process closes); on again shows it', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  await s.setOverlay(work, [ed('ed', tag)]);
  const sdk = s.connectionOf('sdk');

  t.same(await s.setExtensions({ 'editor-mcp': false }), ext([null, true], [false, false]));
  t.same(names(s), ['sdk'], 'the overlay is hidden');
  t.equal(s.connectionOf('sdk'), sdk, 'the configured server keeps its connection');
  t.match(s.overlay, { servers: ['ed'], state: 'ready', editorMcp: false });
  await until(() => taggedPids(tag).length === 1, 10_000, "the overlay's server to be reaped");
  t.match(await rejection(s.call('ed/echo', { text: 'x' })), { code: 'ALBEDO_NOT_FOUND' });

  t.same(await s.setExtensions({ 'editor-mcp': true }), ext([null, true], [true, true]));
  t.same(names(s), ['sdk', 'ed']);
  t.equal(text(await s.call('ed/echo', { text: 'shown' })), 'shown');
  t.equal(s.connectionOf('sdk'), sdk);
});

t.test("the session's choice wins over the settings' both ways; null follows the settings", async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const servers = { sdk: h.stdio(fixture('sdk-server.ts')) };
  writeFileSync(path.join(h.dir, 'extensions.json'), JSON.stringify({ enabled: { mcp: false }, mcp: { servers } }));
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  t.same([s.extensions, s.tools()], [ext([null, false], [null, false]), []], 'the settings say off');
  t.same(await s.setExtensions({ mcp: true }), ext([true, true], [null, true]));
  t.equal(text(await s.call('sdk/echo', { text: 'on' })), 'on', 'on for this session');
  t.same(await s.setExtensions({ mcp: null }), ext([null, false], [null, false]));
  t.same(s.tools(), []);
  await until(() => taggedPids(tag).length === 0, 10_000, 'the server to be reaped');
});

t.test('a failed reload keeps the previous choice and composition, and rejects with its error', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const good = { sdk: h.stdio(fixture('sdk-server.ts')) };
  h.write(good);
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const on = await albedo.sessions.open();
  await on.setOverlay(work, [ed('ed', tag)]);
  const off = await albedo.sessions.open();
  await off.setExtensions({ mcp: false });
  const events = recorder(on);
  // The sdk server now names a credential file that does not exist: the settings resolve no more.
  h.write({ sdk: h.stdio(fixture('sdk-server.ts'), [], { MISSING: { file: path.join(h.dir, 'missing') } }) });
  await until(() => events.some((e) => e.type === 'warning' && e.code === 'ALBEDO_INVALID_CONFIG'), 30_000, 'the failed reload');
  const before = { ext: on.extensions, ids: [on.connectionOf('sdk'), on.connectionOf('ed')], gen: on.generation, names: names(on) };

  t.match(await rejection(on.setExtensions({ 'editor-mcp': false })), { code: 'ALBEDO_INVALID_CONFIG' });
  t.same(
    { ext: on.extensions, ids: [on.connectionOf('sdk'), on.connectionOf('ed')], gen: on.generation, names: names(on) },
    before,
    'nothing changed',
  );
  t.equal(text(await on.call('ed/echo', { text: 'still' })), 'still');
  t.match(await rejection(off.setExtensions({ mcp: true })), { code: 'ALBEDO_INVALID_CONFIG' });
  t.same([off.extensions, off.tools()], [ext([false, false], [null, false]), []], 'still off');
  const rec = (await records(h.dir)).find((r) => r.id === off.id);
  t.same(rec?.options.extensions, { mcp: false }, 'the record keeps the previous choice');

  h.write(good);
  await until(
    async () =>
      await off.setExtensions({ mcp: true }).then(
        () => true,
        () => false,
      ),
    30_000,
    'the settings to mend',
  );
  t.same(off.extensions, ext([true, true], [null, true]));
  t.equal(text(await off.call('sdk/echo', { text: 'mended' })), 'mended');
});

t.test('the choice is recorded: a composer restart restores the session with it', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, faults: true });
  const s = await albedo.sessions.open({ profile: 'anthropic', extensions: { 'editor-mcp': false } });
  const other = await albedo.sessions.open({ extensions: { 'editor-mcp': false } });
  await s.setExtensions({ mcp: false, 'editor-mcp': null });
  await other.setExtensions({ 'editor-mcp': null });
  const rows = await records(h.dir);
  t.same(rows.find((r) => r.id === s.id)?.options, { profile: 'anthropic', extensions: { mcp: false } }, 'the choice in the record');
  t.notOk('extensions' in (rows.find((r) => r.id === other.id)?.options ?? {}), 'null took the choice out');

  const back = restarted(albedo, 'composer');
  albedo.faults!.crash('composer');
  await back;
  await s.idle();
  t.same([s.extensions, s.tools(), s.profile], [ext([false, false], [null, false]), [], 'anthropic'], 'restored with the choice');
  t.same(other.extensions, ext([null, true], [null, true]));
  t.same(await s.setExtensions({ mcp: null }), ext([null, true], [null, true]), 'and it can change again');
  t.equal(text(await s.call('sdk/echo', { text: 'after' })), 'after');
});

t.test('bad input changes nothing: ALBEDO_INVALID_ARGUMENT, not run', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const gen = s.generation;
  for (const bad of [{ mcp: 'yes' }, { other: true }, null, [true]]) {
    t.match(await rejection(s.setExtensions(bad as never)), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' }, JSON.stringify(bad));
  }
  // The composer checks on its own too (another owner's thread may send anything).
  const direct = albedo.kernel.call('composer', 'session/extensions', { id: s.id, extensions: { mcp: 1 } as never });
  t.match(await rejection(direct), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' });
  const unknown = albedo.kernel.call('composer', 'session/extensions', { id: 'nope', extensions: {} });
  t.match(await rejection(unknown), { code: 'ALBEDO_NOT_FOUND' });
  t.same([s.extensions, s.generation], [ext([null, true], [null, true]), gen]);
  await s.close();
  t.match(await rejection(s.setExtensions({ mcp: false })), { code: 'ALBEDO_CLOSED' });
});
