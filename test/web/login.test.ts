// The web pane's login, in real Chromium (issue 12 item 2): the one-time
// link logs the browser in and shows the pane; the same link a second time,
// in a fresh (incognito) context, is the 403 page and no pane; a browser
// without the cookie is told to open the link `albedo open` prints. From the
// test process: no cookie → 401; the browser's cookie with a foreign Origin
// → 403, with the right Origin but no X-Albedo-CSRF → 403, nothing written;
// with both → the write goes through (the refusals are about what was missing).
// Log out: the pane says so, and the cookie no longer works.
import t from 'tap';
import type { HTTPRequest, Page } from 'puppeteer-core';
import { newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import {
  go,
  launchChromium,
  mintLink,
  openPane,
  paneCookie,
  press,
  settingsFiles,
  shown,
  waitText,
  watchErrors,
} from './browser-harness.ts';

t.setTimeout(170_000);

t.test('logging in to the pane', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const chromium = await launchChromium(t);
  const origin = `http://127.0.0.1:${d.info.port}`;

  const { page, errors, link } = await openPane(chromium.browser, d);
  t.equal(new URL(page.url()).pathname, '/ui/', 'the link redirects to the pane');
  t.match(await shown(page), /Servers[\s\S]*MCP sign-ins[\s\S]*Sessions/, 'the pane shows its sections');
  // The list is read after the page is up ("Loading…" until then): wait for it, as a person would.
  t.match(await waitText(page, 'body', 'No server is configured yet'), /No server is configured yet/);

  t.test('the same link again, in a fresh browser context, is refused', async (t) => {
    const context = await chromium.browser.createBrowserContext();
    t.teardown(() => context.close());
    const other = await context.newPage();
    const r = await other.goto(link);
    t.equal(r?.status(), 403, 'the spent link is a 403');
    t.equal(await other.$('nav[aria-label="Sections"]'), null, 'no pane');
    t.match(await shown(other), /albedo open/, 'the page says how to get a new link');
    t.same(
      (await context.cookies()).map((c) => c.name),
      [],
      'no cookie was set',
    );

    const blank = watchErrors(other);
    await other.goto(`${origin}/ui/`);
    await other.waitForSelector('main.logged-out');
    t.match(await shown(other), /Open the link albedo open prints/, 'without a cookie the pane says only how to log in');
    t.equal(await other.$('nav'), null, 'and shows nothing else');
    t.same(blank, [], 'nothing failed on that page');
  });

  t.test('the API refuses a request without the cookie, a foreign Origin and a missing CSRF token', async (t) => {
    const cookie = await paneCookie(page, d.info.port);
    const before = settingsFiles(home);
    const none = await d.call('GET', '/v1/mcp/servers', { token: null });
    t.match(none, { status: 401, body: { error: { code: 'ALBEDO_UNAUTHORIZED' } } }, 'no cookie, no token: 401');
    const read = await d.call('GET', '/v1/mcp/servers', { token: null, headers: { cookie } });
    t.match(
      read,
      { status: 403, body: { error: { code: 'ALBEDO_CSRF' } } },
      'the cookie alone reads nothing (another local server may hold it)',
    );
    const csrf = (await page.evaluate(() => localStorage.getItem('albedo.csrf'))) ?? '';
    t.match(csrf, /^[A-Za-z0-9_-]{43}$/, "the page keeps its token in its origin's storage");
    t.notMatch(page.url(), /#k=/, 'and not in the address bar');

    const entry = sdkServer();
    const foreign = await d.call('PUT', srv('sdk'), { token: null, body: entry, headers: { cookie, origin: 'http://evil.example' } });
    t.match(foreign, { status: 403, body: { error: { code: 'ALBEDO_BAD_ORIGIN' } } }, 'a foreign Origin: 403');
    const noCsrf = await d.call('PUT', srv('sdk'), { token: null, body: entry, headers: { cookie, origin } });
    t.match(noCsrf, { status: 403, body: { error: { code: 'ALBEDO_CSRF' } } }, 'the right Origin, no X-Albedo-CSRF: 403');
    t.same(settingsFiles(home), before, 'nothing was written');

    const ok = await d.call('PUT', srv('sdk'), { token: null, body: entry, headers: { cookie, origin, 'x-albedo-csrf': csrf } });
    t.equal(ok.status, 201, 'with both, the write goes through');
    await page.reload();
    await page.waitForSelector('li[data-server="sdk"]');
    t.pass('the pane lists it');
  });

  t.test("a second tab's login leaves the first working", async (t) => {
    const second = await openPane(chromium.browser, d);
    const first = await paneCookie(page, d.info.port);
    t.equal(first, await paneCookie(second.page, d.info.port), 'one cookie for the browser: the newer login');
    // The first tab reads and writes on: it takes up the token the second one kept.
    await go(page, '#/sessions', '#sessions-title');
    await go(page, '#/servers', '#servers-title');
    await page.waitForSelector('li[data-server="sdk"]');
    const wrote = await page.evaluate(async (entry) => {
      const module = '/ui/app/api.js'; // the pane's own module: the page's token, as the pane holds it
      const { api } = await import(module);
      return (await api('PUT', '/v1/mcp/servers/second', { body: entry })).status;
    }, sdkServer());
    t.equal(wrote, 201, 'a write from the first tab goes through');
    t.equal(await page.$('main.logged-out'), null, 'the first tab was not logged out');
    await go(second.page, '#/sessions', '#sessions-title');
    await go(second.page, '#/servers', '#servers-title');
    await second.page.waitForSelector('li[data-server="second"]');
    t.same(second.errors, [], 'the second tab ran clean');
    await second.page.close();
  });

  /** The pane's own api() in `p` (the page's token, as the pane holds it): the answer's status, or the refusal's code. */
  const ask = (p: Page, path: string): Promise<string> =>
    p.evaluate(async (path) => {
      const module = '/ui/app/api.js';
      const { api } = await import(module);
      try {
        return String((await api('GET', path)).status);
      } catch (e) {
        return String((e as { code?: unknown }).code);
      }
    }, path);
  const isList = (u: string): boolean => new URL(u).pathname === '/v1/mcp/servers';

  t.test("refused while another tab's login has not kept its token yet: the request waits for it", async (t) => {
    const b = await chromium.browser.newPage();
    await b.setRequestInterception(true);
    b.on('request', (r) => void (new URL(r.url()).pathname.startsWith('/ui/app/') ? r.abort() : r.continue()));
    await b.goto(await mintLink(d)); // its redirect set the cookie; its page's scripts do not run
    const refused = page.waitForResponse((r) => isList(r.url()) && r.status() === 403);
    const pending = ask(page, '/v1/mcp/servers');
    await refused;
    // B's page keeps its token now (what its api.js does first): A hears of it and asks again.
    await b.evaluate(() => localStorage.setItem('albedo.csrf', decodeURIComponent(location.hash.slice('#k='.length))));
    t.equal(await pending, '200', "answered, with the newer login's token");
    t.equal(await page.$('main.logged-out'), null, 'not logged out');
    await b.close();
  });

  t.test('sent with the old token, refused after the newer one was kept: asked again', async (t) => {
    let release: (() => void) | undefined;
    let sent!: () => void;
    const held = new Promise<void>((r) => (sent = r));
    const hold = (r: HTTPRequest): void => {
      if (!release && isList(r.url())) {
        release = () => void r.continue();
        sent();
      } else void r.continue();
    };
    await page.setRequestInterception(true);
    page.on('request', hold);
    const pending = ask(page, '/v1/mcp/servers');
    await held;
    const b = await openPane(chromium.browser, d); // logged in fully: the cookie and the kept token are B's
    release!();
    t.equal(await pending, '200');
    page.off('request', hold);
    await page.setRequestInterception(false);
    await b.page.close();
  });

  t.test('log out', async (t) => {
    const cookie = await paneCookie(page, d.info.port);
    await press(page, 'Log out');
    await page.waitForSelector('main.logged-out');
    t.match(await shown(page), /Open the link albedo open prints/, 'the pane says how to log in again');
    t.match(
      await d.call('GET', '/v1/mcp/servers', { token: null, headers: { cookie } }),
      { status: 401 },
      'the old cookie no longer works',
    );
    await page.reload();
    await page.waitForSelector('main.logged-out');
    t.equal(await page.$('nav'), null, 'a reload does not bring the pane back');
  });

  t.test('a login in another tab brings a logged-out tab back', async (t) => {
    const b = await openPane(chromium.browser, d);
    await page.waitForSelector('#servers-title');
    t.equal(await ask(page, '/v1/mcp/servers'), '200', 'and its requests go through');
    await b.page.close();
  });

  t.test('the pane ran clean', async (t) => {
    t.same(errors, [], 'no console error (a CSP refusal is one) and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
