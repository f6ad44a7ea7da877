// A client that goes away once its save is being written (issue 21, review
// of settings/apply): the write is not undone — it is under way in the
// settings service — so the daemon sees it through as it does any save:
// a removed server's saved catalogue is forgotten (and its sign-in ended),
// as if the client had stayed. Before, the daemon cancelled its call and
// answered "nothing was written" to nobody, and skipped all that. The
// write is held between its two renames by holding creds.json's document
// lock from the test (the store's own proper-lockfile protocol), so the
// client leaves exactly then, whatever the machine's speed.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { request } from 'undici';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

t.test('a DELETE whose client leaves while it is written: the removal stands and is followed through', async (t) => {
  const home = tempHome(t);
  const creds = path.join(home, 'creds.json');
  const d = await startDaemon(t, home, { tag: newTag() });
  const body = sdkServer({ secrets: { env: { K: 'removed-secret-1' } } });
  const put = await d.call('PUT', srv('svc'), { body });
  t.equal(put.status, 201, put.text);
  t.equal(put.body?.server?.state, 'discovered', 'the try saved what the server offers');

  const release = await lockfile.lock(creds, { lockfilePath: `${creds}.lock`, realpath: false, stale: 30_000, update: 5_000 });
  const client = new AbortController();
  const del = request(`http://127.0.0.1:${d.info.port}${srv('svc')}`, {
    method: 'DELETE',
    signal: client.signal,
    headers: { authorization: `Bearer ${d.info.token}` },
  });
  del.catch(() => {});
  await until(() => !readFileSync(path.join(home, 'extensions.json'), 'utf8').includes('"svc"'), 60_000, 'extensions.json renamed in');
  client.abort();
  await t.rejects(del, 'the client went away');
  await release();
  await until(async () => (await d.call('GET', srv('svc'))).status === 404, 60_000, 'the removal in force');
  t.notOk(readFileSync(creds, 'utf8').includes('removed-secret-1'), 'and its secret gone: both files the new pair');

  // The same server again, switched off (never tried): nothing is known of it, unless the removed one's catalogue was kept.
  const again = await d.call('PUT', srv('svc'), { body: { ...body, enabled: false } });
  t.equal(again.status, 201, again.text);
  t.equal(again.body?.server?.tools, null, "the removed server's saved catalogue was forgotten");
  t.equal(again.body?.server?.description, '');
});
