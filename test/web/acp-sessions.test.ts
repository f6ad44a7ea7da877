// ACP sessions in the pane's Sessions view (issue 23), in real Chromium
// against a real daemon: an ACP session opened through the daemon's own
// /v1/acp/sessions routes, with a real stdio MCP server as the editor's
// (test/fixtures/sdk-server.ts), is marked ACP and shows its attachment
// (attached, then detached once the adapter lets go), its state, the agent's
// command line and workspace — chosen by the editor and the agent, so shown as
// text: markup stays characters, a reordering character is spelled out — and
// the editor's servers with their states; after a daemon restart, reattach
// required and its server lost. A plain session is not marked. The pane only
// reads /v1/acp (it never changes an overlay) and closes the ACP session as
// any other. A daemon without the ACP routes (404) shows nothing more.
// With ALBEDO_SCREENSHOTS=acp-sessions it saves docs/screenshots/acp-sessions.png.
import t from 'tap';
import type { Page } from 'puppeteer-core';
import { NODE, fixture, newTag, tempDir, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';
import { axeViolations, go, launchChromium, openPane, press, screenshot, waitText, type Pane } from './browser-harness.ts';

t.setTimeout(240_000);

const AGENT = {
  command: '<img src=x onerror="window.__owned=1">',
  args: ['--acp', 'two words', '<b>bold</b>', 'rtl\u202eend'],
};
/** The agent's command line as the pane (and `albedo status`) writes it. */
const AGENT_LINE = `"<img src=x onerror=\\"window.__owned=1\\">" --acp "two words" <b>bold</b> rtl\\u202eend`;

const card = (id: string): string => `li[data-session=${JSON.stringify(id)}]`;

/** The innerText of `sel`, trimmed. */
const textOf = (page: Page, sel: string): Promise<string> => page.$eval(sel, (e) => (e as HTMLElement).innerText.trim());

/** Every request the page makes to /v1/acp, as `METHOD path`. */
function acpRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/v1/acp')) seen.push(`${r.method()} ${u.pathname}`);
  });
  return seen;
}

t.test('ACP sessions in the pane', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const cwd = tempDir(t, 'acp-<i>cwd-');
  let d: Daemon = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('conf'), { body: sdkServer() })).status, 201, 'a configured server');
  const editor = { name: 'ed', command: NODE, args: [fixture('sdk-server.ts')], env: [{ name: 'ALBEDO_TEST_TAG', value: tag }] };
  const created = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [editor], agent: AGENT } });
  t.equal(created.status, 201, created.status === 201 ? 'created' : created.text);
  const { id, token } = created.body as { id: string; token: string };
  const plain = await d.call('POST', '/v1/sessions', { body: {} });
  t.equal(plain.status, 201, plain.text);

  const chromium = await launchChromium(t);
  let pane: Pane = await openPane(chromium.browser, d);
  const top = t;
  let requests = acpRequests(pane.page);

  t.test('marked, attached, ready, with its agent and the editor servers', async (t) => {
    const { page } = pane;
    await press(page, 'Sessions', 'link');
    await page.waitForSelector('#sessions-title');
    await page.waitForSelector(`${card(id)} .acp`);
    t.equal(await page.$eval(`${card(id)} .card-title`, (h) => !!h.querySelector('.acp-mark')), true, 'the ACP session is marked');
    t.equal(await page.$(`${card(plain.body.id)} .acp-mark`), null, 'the plain session is not');
    t.equal(await page.$(`${card(plain.body.id)} .acp`), null, 'and shows no ACP facts');
    t.match(await textOf(page, `${card(id)} .acp-attached`), /\battached$/, 'attached');
    t.match(await textOf(page, `${card(id)} .acp-state`), /\bready$/, 'ready');
    t.equal(await textOf(page, `${card(id)} .acp-agent`), AGENT_LINE, "the agent's command line, as text");
    t.equal(await textOf(page, `${card(id)} .acp-cwd`), cwd, 'its workspace');
    t.match(await textOf(page, `${card(id)} .acp-servers`), /^ed\s+\S\s+(connected|advertised)/, "the editor's server and its state");
    t.same(
      await page.$eval(card(id), (li) => [
        li.querySelectorAll('img').length,
        li.querySelectorAll('b').length,
        li.querySelectorAll('i').length,
      ]),
      [0, 0, 0],
      'no markup of theirs became an element',
    );
    t.equal(await page.evaluate(() => (window as unknown as { __owned?: number }).__owned), undefined, 'nothing of theirs ran');
    t.same(await axeViolations(page), [], 'no axe violation');
  });

  t.test('its own view', async (t) => {
    const { page } = pane;
    await go(page, `#/sessions/${encodeURIComponent(id)}`, '#session-title');
    await page.waitForSelector('#session-title .acp-mark');
    await page.waitForSelector('main .acp');
    t.equal(await textOf(page, 'main .acp-agent'), AGENT_LINE);
    t.match(await textOf(page, 'main .acp-servers'), /^ed\b/);
    t.same(await axeViolations(page), [], 'no axe violation');
    await go(page, '#/sessions', '#sessions-title');
  });

  t.test('detached once the adapter lets go', async (t) => {
    const released = await d.call('DELETE', `/v1/acp/sessions/${id}/attachment`, { headers: { 'albedo-attachment-token': token } });
    t.equal(released.status, 204, released.text);
    t.match(await waitText(pane.page, `${card(id)} .acp-attached`, 'detached'), /detached/, 'read again: detached');
    t.match(await textOf(pane.page, `${card(id)} .acp-state`), /\bready$/, 'still ready: the session and its servers stay');
    await screenshot(pane.page, 'acp-sessions');
  });

  t.test('after a daemon restart: reattach required, the server lost', async (t) => {
    t.same(pane.errors, [], 'the first pane ran clean');
    t.same([...new Set(requests.map((r) => r.split(' ')[0]))], ['GET'], 'the pane only read /v1/acp');
    await pane.page.close();
    await d.stop('SIGKILL');
    d = await startDaemon(top, home, { tag }); // stopped when the whole test ends, not with this subtest
    await until(async () => (await d.call('GET', `/v1/acp/sessions/${id}`)).body?.state === 'reattach_required', 60_000, 'restored');
    pane = await openPane(chromium.browser, d);
    requests = acpRequests(pane.page);
    await go(pane.page, '#/sessions', '#sessions-title');
    await waitText(pane.page, `${card(id)} .acp-state`, 'reattach required');
    t.match(await textOf(pane.page, `${card(id)} .acp-attached`), /\bdetached$/);
    t.match(await textOf(pane.page, `${card(id)} .acp-servers`), /^ed\s+\S\s+lost$/, 'its server: lost');
  });

  t.test('closed from the pane, as any session', async (t) => {
    const { page } = pane;
    await press(page, `Close session ${id.slice(0, 8)}`);
    await waitText(page, '.status-line', 'closed');
    await until(
      async () => !(await d.call('GET', '/v1/sessions')).body.sessions.some((s: { id: string }) => s.id === id),
      30_000,
      'closed',
    );
    t.equal((await d.call('GET', `/v1/acp/sessions/${id}`)).status, 404, 'the daemon forgot the ACP session');
    await page.waitForFunction((sel) => !document.querySelector(sel), {}, card(id));
    t.same([...new Set(requests.map((r) => r.split(' ')[0]))], ['GET'], 'the pane only read /v1/acp');
  });

  t.test('a daemon without the ACP routes: nothing more is shown', async (t) => {
    const again = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [], agent: AGENT } });
    t.equal(again.status, 201, again.status === 201 ? 'created' : again.text);
    const older = await openPane(chromium.browser, d);
    // The routes answered as a daemon that predates them answers an unknown route.
    await older.page.setRequestInterception(true);
    older.page.on('request', (r) => {
      if (!new URL(r.url()).pathname.startsWith('/v1/acp')) return void r.continue();
      void r.respond({
        status: 404,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'ALBEDO_NOT_FOUND', message: 'no such route' } }),
      });
    });
    await go(older.page, '#/sessions', '#sessions-title');
    await older.page.waitForSelector(`${card(again.body.id)} .acp-mark`);
    await go(older.page, `#/sessions/${encodeURIComponent(again.body.id)}`, '#session-title');
    await older.page.waitForSelector('ul.live');
    await go(older.page, '#/sessions', '#sessions-title');
    await older.page.waitForSelector(`${card(again.body.id)} .acp-mark`);
    t.equal(await older.page.$('.acp'), null, 'no ACP facts');
    t.equal(await older.page.$('[role="alert"]'), null, 'and no error');
    t.same(older.errors, [], 'no console error and no exception');
    await older.page.close();
  });

  t.test('the pane ran clean', async (t) => {
    await go(pane.page, '#/servers', '#servers-title');
    t.same(pane.errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
