// MCP sign-ins in real Chromium (issue 12 item 2; docs/web.md, "MCP
// sign-ins": the pane lists the servers that asked for a sign-in under **MCP
// sign-ins**; its sign-in opens the authorization page in a new tab and
// keeps a link to it), against test/fixtures/oauth-stack.ts (oidc-provider,
// which signs alice in by itself, in front of an official-SDK MCP server):
// - Add the server through the form: saved, needing a sign-in, and the
//   status offers Sign in. With the browser's pop-ups blocked, it leads to
//   MCP sign-ins, the sign-in waiting with the link to its page; Cancel ends
//   it (the daemon forgets it).
// - Sign in again and follow the kept link: a second tab runs the flow to the
//   daemon's loopback callback; the pane shows "signed in as alice", and its
//   status and the row name the account signed in to (issue 20 item 2: a
//   sign-in completed by an unexpected account is noticed).
// - Sign out: needs a sign-in again.
// - Sign in with pop-ups allowed: the pane opens the second tab itself.
import t from 'tap';
import { newTag, tempHome } from '../helpers.ts';
import { srv, startDaemon } from '../daemon/harness.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { card, go, launchChromium, openPane, press, typeInto, waitText } from './browser-harness.ts';
import type { Target } from 'puppeteer-core';

t.setTimeout(175_000);

const login = (name: string): string => `/v1/auth/logins/mcp:${encodeURIComponent(name)}`;

t.test('MCP sign-ins', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const d = await startDaemon(t, home, { tag });
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  const browser = chromium.browser;
  /**
   * A new tab that went through the authorization server: seen at its page,
   * or already at the daemon's loopback callback (the server's redirects
   * are over before the tab is reported) with the code and the issuer (iss).
   */
  const authTab = (): Promise<Target> =>
    browser.waitForTarget(
      (x) => {
        if (x.type() !== 'page') return false;
        if (x.url().startsWith(stack.issuer)) return true;
        const u = URL.canParse(x.url()) ? new URL(x.url()) : null;
        return u?.pathname === '/callback' && u.searchParams.get('iss') === stack.issuer && !!u.searchParams.get('code');
      },
      { timeout: 60_000 },
    );
  const row = card('secure');

  t.test('added through the form: saved, needing a sign-in', async (t) => {
    await press(page, 'Add a server', 'link');
    await typeInto(page, '#url', stack.mcpUrl);
    await typeInto(page, '#name', 'secure');
    await press(page, 'Save');
    t.match(await waitText(page, '.status-line', 'Saved secure'), /needs a sign-in/, 'the status says it needs a sign-in');
    t.match(await waitText(page, card('secure'), 'needs sign-in'), /needs sign-in/, 'the servers view says so too');
    // The test's own setup: the sign-in's loopback callback on an ephemeral port (not 33418, which other tests may hold).
    t.equal((await d.call('PATCH', srv('secure'), { body: { oauth: { callbackPort: 0 } } })).status, 200);
  });

  t.test("pop-ups blocked: the status's Sign in waits under MCP sign-ins, with its link; Cancel ends it", async (t) => {
    await page.evaluate(() => {
      (window as unknown as { realOpen: unknown }).realOpen = window.open;
      window.open = () => null;
    });
    const offer = await page.waitForSelector('.status-line button.primary');
    t.equal(await offer!.evaluate((b) => b.textContent), 'Sign in to secure', 'the status offers the sign-in');
    await offer!.click();
    await page.waitForSelector('#sign-ins-title');
    t.equal(await page.$eval('#sign-ins-title', (e) => e.textContent), 'MCP sign-ins', "the section's heading");
    t.match(await waitText(page, row, 'needs sign-in'), /not_signed_in/, 'the server is listed, with its state and reason');
    const link = await page.waitForSelector(`${row} a[target="_blank"]`);
    const [href, rel, text] = await link!.evaluate((a) => [a.getAttribute('href'), a.getAttribute('rel'), (a as HTMLElement).innerText]);
    t.equal(new URL(href!).origin, stack.issuer, 'the link is the authorization page');
    t.equal(rel, 'noopener noreferrer');
    t.match(text, /Open the sign-in page/);
    t.match(await waitText(page, row, 'waiting for the browser'), /waiting for the browser/, 'the sign-in state');
    t.equal((await d.call('GET', login('secure'))).body.state, 'pending', 'the daemon has it pending');
    await press(page, 'Cancel the sign-in to secure');
    await waitText(page, '.status-line', 'cancelled');
    t.equal(await page.$(`${row} a[target="_blank"]`), null, 'the link is gone');
    t.equal((await d.call('GET', login('secure'))).status, 404, 'the daemon forgot the sign-in');
    t.ok(await page.waitForSelector('::-p-aria([name="Sign in to secure"][role="button"])'), 'Sign in is offered again');
  });

  t.test('the kept link opens a second tab that signs alice in', async (t) => {
    await press(page, 'Sign in to secure');
    const link = await page.waitForSelector(`${row} a[target="_blank"]`);
    const opened = authTab();
    await link!.click();
    const tab = await opened;
    t.ok(tab, 'a second tab opened the authorization page');
    t.match(await waitText(page, row, 'signed in as alice'), /signed in as alice/, 'the pane shows the sign-in');
    t.match(await waitText(page, '.status-line', 'Signed in to secure'), /Signed in to secure as alice/, 'the status names the account');
    t.match(await waitText(page, `${row} .signed-in`, 'alice'), /Signed in to secure as alice/, 'so does the row');
    t.match((await d.call('GET', srv('secure'))).body.auth, { state: 'signed_in', account: 'alice' });
    const second = await tab.page();
    t.match(second?.url() ?? '', /^http:\/\/127\.0\.0\.1:\d+\/callback\?/, "the tab ended at the daemon's loopback callback");
    await second?.close();
  });

  t.test('sign out: needs a sign-in again', async (t) => {
    await press(page, 'Sign out of secure');
    await waitText(page, '.status-line', 'Signed out of secure');
    t.match(await waitText(page, row, 'signed out'), /Sign in/, 'signed out, with Sign in offered');
    t.match((await d.call('GET', srv('secure'))).body, { state: 'needs_sign_in', auth: { state: 'signed_out' } });
  });

  t.test('pop-ups allowed: Sign in opens the second tab itself', async (t) => {
    await page.evaluate(() => {
      window.open = (window as unknown as { realOpen: typeof window.open }).realOpen;
    });
    const opened = authTab();
    await press(page, 'Sign in to secure');
    const tab = await opened;
    t.equal(await (await tab.page())?.evaluate(() => window.opener === null), true, 'the new tab cannot reach back into the pane');
    t.match(await waitText(page, row, 'signed in as alice'), /signed in as alice/);
    t.match(await waitText(page, '.status-line', 'Signed in to secure'), /Signed in to secure as alice/, 'the status names the account');
    await (await tab.page())?.close();
    await go(page, '#/servers', '#servers-title');
    t.notMatch(await waitText(page, card('secure'), 'signed in as alice'), /needs sign-in/, 'the servers view: signed in');
  });

  t.test('the pane ran clean', async (t) => {
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
