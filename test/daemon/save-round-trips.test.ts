// A settings save is one transaction in the settings service (issue 21, item
// 4): each write through the daemon's SettingsWrites is one call to the
// settings service, `settings/apply`, which calls back the daemon's `save`
// for a precondition (`save/check`, only with If-Match) and for the strict
// save's try (`save/try`, only for an enabled server); and the daemon's
// thread never reads the settings file. Counted by an interceptor on the
// kernel (`kernel.use`), in process, over the real services, a real server
// and real files.
import t from 'tap';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { SettingsWrites } from '../../daemon/writes.ts';
import { NODE, albedoFor, fixture, newTag, tempHome } from '../helpers.ts';

t.setTimeout(120_000);

t.test('one settings-service call per save, plus the try and the precondition it asks of the daemon', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const albedo = await albedoFor(t, tag, { home, transportWorkers: 1 });
  albedo.sessions.start();
  await albedo.kernel.call('settings', 'settings/get', {});
  const writes = new SettingsWrites({ kernel: albedo.kernel, authStatuses: () => albedo.authStatuses() }, { eraCachePath: null });

  // Every call routed by the kernel, from this thread or a worker: `service method`.
  let calls: string[] = [];
  albedo.kernel.use((next) => (c) => {
    calls.push(`${c.service} ${c.method}`);
    return next(c);
  });
  // Every read of the settings file on this thread (the settings service reads it in its worker, where this is not seen).
  const file = path.join(home, 'extensions.json');
  const reads: string[] = [];
  const { readFileSync, openSync } = fs;
  fs.readFileSync = ((p: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
    if (typeof p === 'string' && path.basename(p) === 'extensions.json') reads.push(p);
    return (readFileSync as (...a: unknown[]) => unknown)(p, ...rest);
  }) as typeof fs.readFileSync;
  fs.openSync = ((p: fs.PathLike, ...rest: unknown[]) => {
    if (typeof p === 'string' && path.basename(p) === 'extensions.json') reads.push(p);
    return (openSync as (...a: unknown[]) => number)(p, ...rest);
  }) as typeof fs.openSync;
  syncBuiltinESMExports();
  t.teardown(() => {
    fs.readFileSync = readFileSync;
    fs.openSync = openSync;
    syncBuiltinESMExports();
  });

  /** The calls one save made: to the settings service, and to the daemon's `save`. */
  const made = async (save: () => Promise<unknown>): Promise<{ settings: string[]; save: string[] }> => {
    calls = [];
    await save();
    return {
      settings: calls.filter((c) => c.startsWith('settings ')),
      save: calls.filter((c) => c.startsWith('save ')),
    };
  };
  const apply = ['settings settings/apply'];
  const sdk = { command: NODE, args: [fixture('sdk-server.ts')], secrets: { env: { ALBEDO_TEST_TAG: tag } } };

  const created = await made(() => writes.put('sdk', sdk, {}, false));
  t.same(created, { settings: apply, save: ['save save/try'] }, 'PUT of an enabled server: one call, and its try');
  t.ok(calls.includes('transport connection/open'), 'the try opened the server through the transport');
  const etag = (await writes.put('off', { command: NODE, args: ['-e', '0'], enabled: false }, {}, false)).etag!;

  t.same(
    await made(() => writes.put('off', { command: NODE, args: ['-e', '1'], enabled: false }, {}, false)),
    { settings: apply, save: [] },
    'PUT of a switched-off server: one call, no try',
  );
  const current = (await writes.patch('off', {}, {}, true)).etag!;
  t.not(current, etag, 'the version moved with the PUT');
  t.same(
    await made(() => writes.patch('off', { args: ['-e', '2'] }, { ifMatch: current }, false)),
    { settings: apply, save: ['save save/check'] },
    'PATCH with If-Match: one call, and the precondition',
  );
  t.same(await made(() => writes.setEnabled('off', false, {})), { settings: apply, save: [] }, 'disable: one call');
  t.same(await made(() => writes.setEnabled('sdk', true, {})), { settings: apply, save: ['save save/try'] }, 'enable: one call, its try');
  t.same(await made(() => writes.patchSection({ retryMs: 1_234 }, {})), { settings: apply, save: [] }, 'PATCH /v1/mcp: one call');
  t.same(await made(() => writes.remove('off', {})), { settings: apply, save: [] }, 'DELETE: one call');
  t.same(await made(() => writes.remove('sdk', {})), { settings: apply, save: [] });

  t.same(reads, [], 'the daemon never read the settings file itself');
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  t.same(doc, { mcp: { servers: {}, retryMs: 1_234 } }, 'and every save was written');
});
