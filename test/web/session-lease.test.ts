// The web pane keeps the leases of the sessions it opens (issue 25, item 2), in real Chromium against a daemon whose
// lease is shortened by ALBEDO_SESSION_LEASE_MS: a session opened from the pane stays while the page is open, with its
// event stream closed (the list view showing), after a session nobody renews expired in the same daemon; once the tab is
// closed, the session expires.
import t from 'tap';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { go, launchChromium, openPane, press } from './browser-harness.ts';

t.setTimeout(170_000);

t.test('the pane renews the sessions it opened, while it is open', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_SESSION_LEASE_MS: '3000' } });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201);
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  const listed = async (): Promise<string[]> => (await d.call('GET', '/v1/sessions')).body.sessions.map((s: { id: string }) => s.id);

  await press(page, 'Sessions', 'link');
  await page.waitForSelector('#sessions-title');
  await press(page, 'Open a session');
  await page.waitForSelector('#session-title');
  const id = decodeURIComponent(new URL(page.url()).hash.replace('#/sessions/', ''));
  // Back to the list: the session's event stream closes, so only the page's renewals hold it.
  await go(page, '#/sessions', '#sessions-title');

  const idle = (await d.call('POST', '/v1/sessions', { body: {} })).body.id as string;
  await until(async () => !(await listed()).includes(idle), 60_000, 'a session nobody renews to expire');
  t.ok((await listed()).includes(id), "the pane's session outlived it");
  t.match((await d.call('GET', '/v1/sessions')).body.sessions[0], { id, lease: { ttlMs: 3_000, streams: 0 } }, 'no stream holds it');

  t.same(errors, [], 'no console error and no exception');
  await page.close();
  await until(async () => !(await listed()).includes(id), 60_000, "the pane's session to expire once its tab closed");
  t.pass('the tab closed: its session expired');
  t.same(await chromium.close(), [], 'no chromium process outlives the test');
});
