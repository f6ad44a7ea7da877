// What the daemon's own callbacks (`save/check`, `save/try`, which the
// settings service calls back through the kernel) throw is what the save
// answers, as it was thrown, although it crossed the settings worker twice
// (issue 21, review of settings/apply): an API error keeps its status and
// path (a server that cannot start: 409 with its code; a stale If-Match:
// 412), the daemon's own trouble its code, and a defect stays a defect —
// the same Error, so the route answers 500 with its fixed message (never
// the defect's own, which may quote anything) and logs its stack. In
// process, over the real services, a real server and real files; the
// defect is injected by an interceptor on the kernel.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SettingsWrites } from '../../daemon/writes.ts';
import { ApiError, toApiError } from '../../daemon/errors.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { NODE, albedoFor, fixture, newTag, tempHome } from '../helpers.ts';

t.setTimeout(120_000);

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the save to fail');
}

t.test("a callback's error is the save's answer, as it was thrown", async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const albedo = await albedoFor(t, tag, { home, transportWorkers: 1 });
  albedo.sessions.start();
  await albedo.kernel.call('settings', 'settings/get', {});
  const writes = new SettingsWrites({ kernel: albedo.kernel, authStatuses: () => albedo.authStatuses() }, { eraCachePath: null });
  const file = path.join(home, 'extensions.json');
  const tagged = { secrets: { env: { ALBEDO_TEST_TAG: tag } } };
  await writes.put('off', { command: NODE, args: ['-e', '0'], enabled: false }, {}, false);
  const before = readFileSync(file);

  // A server that cannot start: the try's 409, with its code and no path.
  const exits = await failure(writes.put('exits', { command: NODE, args: ['-e', 'process.exit(3)'], ...tagged }, {}, false));
  t.ok(exits instanceof ApiError, 'an API error');
  t.match(exits, { status: 409, code: 'ALBEDO_SERVER_EXITED', outcome: 'not_run' });
  // A stale If-Match: the check's 412, naming the header.
  const stale = await failure(writes.patch('off', { args: ['-e', '1'] }, { ifMatch: '"stale"' }, false));
  t.match(stale, { status: 412, code: 'ALBEDO_PRECONDITION_FAILED', path: ['headers', 'if-match'] });

  // The daemon's own trouble while it tries: its code and status (503), as thrown.
  const lost = new AlbedoError('ALBEDO_SERVICE_LOST', 'the transport went away', { outcome: 'unknown', data: { service: 'transport' } });
  let inject: unknown = lost;
  albedo.kernel.use((next) => (c) => (c.service === 'transport' && c.method === 'connection/open' ? Promise.reject(inject) : next(c)));
  const gone = await failure(writes.put('sdk', { command: NODE, args: [fixture('sdk-server.ts')], ...tagged }, {}, false));
  t.match(gone, { code: 'ALBEDO_SERVICE_LOST', message: lost.message, data: { service: 'transport' } });
  t.equal(toApiError(gone).status, 503);

  // A defect while it tries: the very Error, so it is answered as one (500, the fixed message) and logged by its stack.
  const defect = new TypeError('cannot read the secret-value-7 of undefined');
  inject = defect;
  const thrown = await failure(writes.put('sdk', { command: NODE, args: [fixture('sdk-server.ts')], ...tagged }, {}, false));
  t.equal(thrown, defect, 'the same Error');
  const answered = toApiError(thrown);
  t.match(answered, { status: 500, code: 'ALBEDO_INTERNAL' });
  t.notOk(answered.message.includes('secret-value-7'), "the defect's message is not the answer");
  t.same(readFileSync(file), before, 'nothing was written by any of them');
});
