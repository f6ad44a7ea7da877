// The flows a gateway relays, through albedo.sessions: a call's progress
// (`onProgress`), its cancellation, and `request()` (logging/setLevel,
// completion/complete, resources/subscribe) with the log messages and
// resource updates as the transport's events of `connectionOf(server)`. On
// the direct path (the server's connection open) and through the composer
// (a server advertised from its saved catalogue whose dial the test holds:
// fixtures/flows-server.ts --gate), against the official SDK server 2.x.
import t from 'tap';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createAlbedo } from '../../api/albedo.ts';
import type { Albedo } from '../../api/albedo.ts';
import type { AlbedoSession } from '../../api/sessions.ts';
import type { Progress } from '../../api/progress.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { albedoFor, fixture, httpFixture, newTag, rejection, until, waitNoLeftovers } from '../helpers.ts';
import { readLog, text } from '../fixtures/composer-ports.ts';
import { sessionHome as home } from '../fixtures/session-home.ts';

t.setTimeout(240_000);
t.teardown(closeCatalogueStores);

const FLOWS = fixture('flows-server.ts');

const PICK = { method: 'completion/complete', ref: { type: 'ref/prompt', name: 'pick' }, argument: { name: 'color', value: 'g' } } as const;

/** The transport's log and resource events of the session's connection to `server`. */
function follow(a: Albedo, s: AlbedoSession, server: string) {
  const logs: string[] = [];
  const updates: string[] = [];
  a.kernel.on('transport', 'connection/log', (e) => {
    if (e.id === s.connectionOf(server)) logs.push(e.level);
  });
  a.kernel.on('transport', 'connection/resource-updated', (e) => {
    if (e.id === s.connectionOf(server)) updates.push(e.uri);
  });
  return { logs, updates };
}

for (const [kind, era] of [
  ['stdio', 'legacy'],
  ['stdio', 'modern'],
  ['http', 'legacy'],
  ['http', 'modern'],
] as const) {
  t.test(`direct path, ${kind} ${era}: progress, cancel, request(), connectionOf`, async (t) => {
    const tag = newTag();
    const h = home(t, tag);
    const log = path.join(h.dir, 'flows.log');
    const srv = kind === 'http' ? await httpFixture(t, tag, FLOWS, ['--http', era, '--log', log]) : undefined;
    h.write({ flows: srv ? { url: srv.url } : h.stdio(FLOWS, ['--stdio', era, '--log', log]) });
    const a = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
    const s = await a.sessions.open();
    t.match(s.status(), [{ name: 'flows', state: 'ready' }]);
    const id = s.connectionOf('flows');
    t.type(id, 'string', 'the connection id of the server');
    t.equal(s.connectionOf('nope'), undefined);
    const { logs, updates } = follow(a, s, 'flows');

    const seen: Progress[] = [];
    t.equal(text(await s.call('flows/progress', { steps: 3 }, { onProgress: (p) => seen.push(p) })), 'done 3');
    t.same(
      seen.map((p) => p.progress),
      [1, 2, 3],
    );

    const ac = new AbortController();
    const waiting = rejection(s.call('flows/wait', { tag: 'direct' }, { signal: ac.signal }));
    await until(() => readLog(log).some((e) => e.tag === 'direct' && e.started), 30_000, 'the tool to start');
    ac.abort();
    t.match(await waiting, { code: 'ALBEDO_DEADLINE' });
    await until(() => readLog(log).some((e) => e.tag === 'direct' && 'aborted' in e), 30_000, 'the server to see the cancel');
    t.match(
      readLog(log).find((e) => e.tag === 'direct' && 'aborted' in e),
      { aborted: true },
      'the server saw its request cancelled',
    );

    t.same(await s.request('flows', { method: 'logging/setLevel', level: 'alert' }), {});
    await s.call('flows/log_all', {});
    await until(() => logs.length >= 2, 10_000, 'the log events');
    t.same(logs, ['alert', 'emergency']);
    t.same(await s.request('flows', PICK), { completion: { values: ['green', 'grey', 'gold'], total: 3, hasMore: false } });
    t.same(await s.request('flows', { method: 'resources/subscribe', uri: 'fixture://counter' }), {});
    await s.call('flows/touch', { uri: 'fixture://counter' });
    await until(() => updates.length >= 1, 10_000, 'the update');
    t.same(updates, ['fixture://counter']);

    t.match(await rejection(s.request('nope', PICK)), { code: 'ALBEDO_NOT_FOUND', outcome: 'not_run' });
    t.match(await rejection(s.request('flows', { method: 'tools/call', name: 'x' } as never)), {
      code: 'ALBEDO_INVALID_ARGUMENT',
      outcome: 'not_run',
    });
    t.match(await rejection(s.call('flows/progress', { steps: 1 }, { onProgress: 'no' as never })), {
      code: 'ALBEDO_INVALID_ARGUMENT',
      outcome: 'not_run',
    });
    t.equal(s.connectionOf('flows'), id, 'the same connection throughout');
  });
}

for (const era of ['legacy', 'modern'] as const) {
  t.test(`through the composer, stdio ${era}: a call and requests that wait for the dial`, async (t) => {
    const tag = newTag();
    const h = home(t, tag);
    const log = path.join(h.dir, 'flows.log');
    const gate = path.join(h.dir, 'gate');
    mkdirSync(gate);
    writeFileSync(path.join(gate, 'open'), '');
    h.write({ flows: h.stdio(FLOWS, ['--stdio', era, '--log', log, '--gate', gate]) });
    // A first instance saves the catalogue.
    const a1 = await createAlbedo({ home: h.dir, transportWorkers: 1 });
    await a1.sessions.open();
    await a1.close();
    t.same(await waitNoLeftovers(tag), [], 'the first instance reaped its server');

    // The next one advertises from it while the server's start is held: every call and request goes to the composer.
    rmSync(path.join(gate, 'open'));
    const a = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
    const s = await a.sessions.open();
    t.match(s.status(), [{ name: 'flows', state: 'advertised' }], 'not connected yet');
    const { logs, updates } = follow(a, s, 'flows');
    const seen: Progress[] = [];
    const called = s.call('flows/progress', { steps: 3 }, { onProgress: (p) => seen.push(p) });
    const level = s.request('flows', { method: 'logging/setLevel', level: 'critical' });
    const picked = s.request('flows', PICK);
    const subscribed = s.request('flows', { method: 'resources/subscribe', uri: 'fixture://counter' });
    const ac = new AbortController();
    const waiting = rejection(s.call('flows/wait', { tag: 'composer' }, { signal: ac.signal }));
    writeFileSync(path.join(gate, 'open'), '');

    t.equal(text(await called), 'done 3');
    t.same(
      seen.map((p) => p.progress),
      [1, 2, 3],
      'the progress of a call made through the composer',
    );
    t.same(await level, {});
    t.same(await picked, { completion: { values: ['green', 'grey', 'gold'], total: 3, hasMore: false } });
    t.same(await subscribed, {});
    t.type(s.connectionOf('flows'), 'string');

    await until(() => readLog(log).some((e) => e.tag === 'composer' && e.started), 30_000, 'the tool to start');
    ac.abort();
    t.match(await waiting, { code: 'ALBEDO_DEADLINE' });
    await until(() => readLog(log).some((e) => e.tag === 'composer' && 'aborted' in e), 30_000, 'the server to see the cancel');
    t.match(
      readLog(log).find((e) => e.tag === 'composer' && 'aborted' in e),
      { aborted: true },
      'a call cancelled through the composer is cancelled on the server',
    );

    await s.call('flows/log_all', {});
    await until(() => logs.length >= 3, 10_000, 'the log events');
    t.same(logs, ['critical', 'alert', 'emergency'], 'the level set through the composer holds');
    await s.call('flows/touch', { uri: 'fixture://counter' });
    await until(() => updates.length >= 1, 10_000, 'the update');
    t.same(updates, ['fixture://counter'], 'the subscription made through the composer holds');
  });
}
