// A session's overlay across a composer crash (kernel fault injection), with real servers and real LMDB: the restored
// session shows a non-empty overlay `lost` (with editor-mcp off: not blocking, `ready`) until it is published again;
// its record keeps the overlay's names and digest only, never a command or a value; a publication the crash cuts
// short is ALBEDO_OVERLAY_UNCERTAIN.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import type { Albedo } from '../../api/albedo.ts';
import type { OverlayServer } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { NODE, albedoFor, fixture, newTag, rejection, tempDir, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

function ed(name: string, tag: string, secret: string, args = [fixture('sdk-server.ts')]): OverlayServer {
  const env = [
    { name: 'ALBEDO_TEST_TAG', value: tag },
    { name: 'OVERLAY_SECRET', value: secret },
  ];
  return { name, command: NODE, args, env };
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

/** The session records as LMDB holds them (the environment closed after the read). */
async function records(home: string): Promise<unknown[]> {
  const env = open({ path: path.join(home, 'store'), maxDbs: 16, readOnly: true });
  try {
    return [...env.openDB({ name: 'mcp_sessions' }).getRange()].map((x) => x.value);
  } finally {
    await env.close();
  }
}

const inflight = (albedo: Albedo): number => albedo.kernel.slots('composer').reduce((n, s) => n + s.inflight, 0);

t.test('a composer restart loses a non-empty overlay: `lost` until published again; the record holds names and digest', async (t) => {
  const tag = newTag();
  const secret = `s3cret-${randomUUID()}`;
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const work = tempDir(t, 'albedo-ws-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, faults: true });
  const s = await albedo.sessions.open();
  const off = await albedo.sessions.open({ extensions: { 'editor-mcp': false } });
  const r = await s.setOverlay(work, [ed('ed', tag, secret)]);
  await off.setOverlay(work, [ed('hidden', tag, secret)]);
  const empty = await albedo.sessions.open();
  await empty.setOverlay(work, []);

  const rows = (await records(h.dir)) as Array<{ id: string; overlay?: unknown }>;
  t.same(rows.find((x) => x.id === s.id)?.overlay, { servers: ['ed'], digest: r.digest }, 'the record: names and digest');
  t.equal(rows.find((x) => x.id === empty.id)?.overlay, undefined, 'an empty overlay is not recorded');
  const raw = JSON.stringify(rows);
  t.notOk(raw.includes(secret), 'no value in a record');
  t.notOk(raw.includes('OVERLAY_SECRET'), 'nor an env name');
  t.notOk(raw.includes(NODE), 'nor a command');

  const back = restarted(albedo, 'composer');
  albedo.faults!.crash('composer');
  await back;
  await until(() => s.overlay?.state === 'lost', 30_000, 'the restored snapshot');
  t.same(s.overlay, { servers: ['ed'], digest: r.digest, state: 'lost', editorMcp: true }, 'lost, as the record said');
  t.notOk(
    s.status().some((x) => x.name === 'ed'),
    'its servers are gone',
  );
  await s.idle();
  await off.idle();
  await until(() => off.overlay !== undefined && off.overlay.servers.length === 1, 30_000, 'the other restored snapshot');
  t.match(off.overlay, { servers: ['hidden'], state: 'ready', editorMcp: false }, 'editor-mcp off: not blocking');
  t.match(empty.overlay, { servers: [], state: 'ready' }, 'an empty overlay is not lost');
  t.equal(text(await s.call('sdk/echo', { text: 'still' })), 'still', 'the configured server serves on');

  const again = await s.setOverlay(work, [ed('ed', tag, secret)]);
  t.equal(again.changed, true, 'the same list publishes again');
  t.same(s.overlay, { servers: ['ed'], digest: again.digest, state: 'ready', editorMcp: true });
  t.equal(text(await s.call('ed/echo', { text: 'back' })), 'back');
  t.notOk(JSON.stringify(await records(h.dir)).includes(secret));
});

t.test('a publication the composer crash cuts short is uncertain; a timeout too', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const work = tempDir(t, 'albedo-ws-');
  const gate = tempDir(t, 'albedo-gate-');
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, faults: true });
  const s = await albedo.sessions.open();
  const held = s.setOverlay(work, [ed('gated', tag, 'unused-value', [fixture('gated-server.ts'), gate])]);
  await until(() => existsSync(path.join(gate, 'started')) && inflight(albedo) >= 1, 30_000, 'the gated server to start');
  const back = restarted(albedo, 'composer');
  albedo.faults!.crash('composer');
  const err = await rejection(held);
  t.match(err, { code: 'ALBEDO_OVERLAY_UNCERTAIN', outcome: 'unknown', data: { code: 'ALBEDO_SERVICE_LOST' } });
  await back;

  const timed = await rejection(
    s.setOverlay(work, [ed('gated2', tag, 'unused-value', [fixture('gated-server.ts'), gate])], { timeoutMs: 300 }),
  );
  t.match(timed, { code: 'ALBEDO_OVERLAY_UNCERTAIN', data: { code: 'ALBEDO_DEADLINE' } });
  writeFileSync(path.join(gate, 'open'), '');
  await until(() => s.overlay?.servers.includes('gated2') === true, 30_000, 'the publication that timed out to complete on its own');
  t.ok(
    s.status().some((x) => x.name === 'gated2' && x.state === 'ready'),
    'and shows the server',
  );
});
