// The pane's accessibility (issue 12 item 2: "labels on every control,
// keyboard-only use works, contrast adequate"), in real Chromium: axe-core
// finds no violation on the servers list, the form with a strict-save error
// shown, the delete confirmation, MCP sign-ins, a session's view and the
// logged-out page; and a person using only the keyboard (Tab, Enter, Space,
// typing) adds an http server with a bearer token, sees it listed, and
// deletes it through the confirmation, Esc cancelling it first. With
// ALBEDO_SCREENSHOTS=1 it saves the screenshots docs/screenshots/ shows.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'puppeteer-core';
import { NODE, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import {
  axeViolations,
  card,
  go,
  launchChromium,
  openPane,
  press,
  screenshot,
  typeInto,
  waitText,
  watchErrors,
} from './browser-harness.ts';

t.setTimeout(175_000);

/** Presses Tab until the focused element has this id or shows this text (at most 60 presses); the presses it took. */
async function tabTo(page: Page, want: { id?: string; text?: string }): Promise<number> {
  for (let n = 1; n <= 60; n++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      // textContent, not innerText: a visually hidden part of a name is laid out as a block of its own.
      return { id: el?.id ?? '', text: (el?.textContent ?? '').replace(/\s+/g, ' ').trim() };
    });
    if ((want.id && at.id === want.id) || (want.text && at.text === want.text)) return n;
  }
  throw new Error(`Tab never reached ${JSON.stringify(want)}`);
}

/** Whether the focused element draws a visible focus outline. */
const focusVisible = (page: Page): Promise<boolean> =>
  page.evaluate(() => {
    const el = document.activeElement;
    if (!el) return false;
    const s = getComputedStyle(el);
    return el.matches(':focus-visible') && s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
  });

t.test('accessibility', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  // A server that cannot start as saved (its variable is not set), so the list shows a last error.
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify(
      {
        mcp: {
          servers: {
            docs: {
              command: '/usr/local/bin/docs-mcp',
              args: ['--root', '/srv/docs'],
              env: { DOCS_TOKEN: { env: 'ALBEDO_TEST_UNSET_DOCS_TOKEN' } },
            },
          },
        },
      },
      null,
      2,
    ),
  );
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const d = await startDaemon(t, home, { tag });
  for (const [name, body] of [
    ['sdk', sdkServer({ secrets: { env: { SDK_KEY: 'stored' } } })],
    ['secure', { url: stack.mcpUrl, oauth: { callbackPort: 0 } }],
    ['archive', sdkServer({ enabled: false })],
  ] as const) {
    t.equal((await d.call('PUT', srv(name), { body })).status, 201, `${name} saved`);
  }
  const bearer = `kbd-${newTag()}`;
  const http = await httpFixture(t, tag, fixture('sdk-http-server.ts'), ['--bearer', bearer]);
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);

  t.test('the servers list', async (t) => {
    await waitText(page, card('docs'), 'ALBEDO_INVALID_CONFIG');
    await waitText(page, card('sdk'), 'tools');
    t.same(await axeViolations(page), [], 'no axe violation');
    await screenshot(page, 'servers');
  });

  t.test('the delete confirmation', async (t) => {
    await press(page, 'Delete archive');
    await page.waitForSelector('dialog[open]');
    t.same(await axeViolations(page), [], 'no axe violation');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));
  });

  t.test('the form, with a strict-save error', async (t) => {
    await press(page, 'Add a server', 'link');
    await page.locator('#transport-stdio').click();
    await typeInto(page, '#command', `${NODE} ${fixture('sdk-servr.ts')} --root "/srv/my docs"`);
    await typeInto(page, '#name', 'docs-typo');
    await press(page, 'Save');
    await page.waitForSelector('form [role="alert"]');
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'alert');
    t.same(await axeViolations(page), [], 'no axe violation');
    // The screenshot shows what was typed above the refusal.
    await page.evaluate(() => document.getElementById('transport-http')?.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'form-error');
    await press(page, 'Add an env entry');
    t.same(await axeViolations(page), [], 'no axe violation with an env entry either');
    await press(page, 'Cancel');
    await page.waitForSelector('#servers-title');
  });

  t.test('MCP sign-ins', async (t) => {
    await go(page, '#/sign-ins', '#sign-ins-title');
    await waitText(page, card('secure'), 'needs sign-in');
    t.same(await axeViolations(page), [], 'no axe violation');
    // A sign-in waiting, its link kept (pop-ups blocked, so no second tab), then cancelled.
    await page.evaluate(() => {
      window.open = () => null;
    });
    await press(page, 'Sign in to secure');
    await waitText(page, card('secure'), 'Open the sign-in page');
    t.same(await axeViolations(page), [], 'no axe violation with a sign-in waiting');
    await screenshot(page, 'sign-ins');
    await press(page, 'Cancel the sign-in to secure');
    await waitText(page, '.status-line', 'cancelled');
  });

  t.test("a session's view", async (t) => {
    // A session needs every enabled server prepared: docs, which cannot be, is switched off first.
    await go(page, '#/servers', '#servers-title');
    await press(page, 'Disable docs');
    await waitText(page, '.status-line', 'Disabled docs');
    await go(page, '#/sessions', '#sessions-title');
    await press(page, 'Open a session');
    await page.waitForSelector('#session-title');
    await waitText(page, 'ul.tools-list', 'mcp_sdk_echo_');
    await page.locator('li.tool summary').click();
    await page.waitForSelector('details[open] pre.schema');
    t.same(await axeViolations(page), [], 'no axe violation');
    await screenshot(page, 'session');
    await press(page, 'Close this session');
    await page.waitForSelector('#sessions-title');
  });

  t.test('the logged-out page', async (t) => {
    const context = await chromium.browser.createBrowserContext();
    t.teardown(() => context.close());
    const other = await context.newPage();
    const otherErrors = watchErrors(other);
    await other.goto(`http://127.0.0.1:${d.info.port}/ui/`);
    await other.waitForSelector('main.logged-out');
    t.same(await axeViolations(other), [], 'no axe violation');
    t.same(otherErrors, []);
  });

  t.test('keyboard only: add an http server, then delete it', async (t) => {
    const kb = await chromium.browser.newPage();
    await kb.setViewport({ width: 1280, height: 800 });
    kb.setDefaultTimeout(60_000);
    const kbErrors = watchErrors(kb);
    await kb.goto(`http://127.0.0.1:${d.info.port}/ui/#/servers`);
    await kb.waitForSelector('#servers-title');
    await kb.waitForFunction(() => document.activeElement?.id === 'servers-title');
    t.pass("the view's heading has the focus when the page opens");
    await tabTo(kb, { text: 'Add a server' });
    t.ok(await focusVisible(kb), 'the focused link shows its focus');
    await kb.keyboard.press('Enter');
    await kb.waitForFunction(() => document.activeElement?.id === 'form-title');
    await tabTo(kb, { id: 'url' });
    t.ok(await focusVisible(kb), 'the focused field shows its focus');
    await kb.keyboard.type(http.url);
    await tabTo(kb, { id: 'name' });
    await kb.keyboard.down('Control');
    await kb.keyboard.press('KeyA');
    await kb.keyboard.up('Control');
    await kb.keyboard.type('kbd');
    await tabTo(kb, { id: 'bearer' });
    await kb.keyboard.type(bearer);
    await tabTo(kb, { text: 'Save' });
    await kb.keyboard.press('Space');
    await waitText(kb, '.status-line', 'Saved kbd');
    t.match(await waitText(kb, card('kbd'), 'discovered'), /tools/, 'listed, discovered, with its tools');
    t.notOk((await kb.content()).includes(bearer), 'the token is nowhere in the page');

    await kb.focus('#servers-title');
    await tabTo(kb, { text: 'Delete kbd' });
    await kb.keyboard.press('Enter');
    await kb.waitForSelector('dialog[open]');
    t.equal(await kb.evaluate(() => document.activeElement?.textContent), 'Cancel', 'the dialog has the focus, on Cancel');
    await kb.keyboard.press('Escape');
    await kb.waitForFunction(() => !document.querySelector('dialog[open]'));
    await kb.waitForFunction(() => document.activeElement?.textContent === 'Delete kbd');
    t.pass('Esc closed it and gave the focus back to Delete');
    await kb.keyboard.press('Space');
    await kb.waitForSelector('dialog[open]');
    await tabTo(kb, { text: 'Delete kbd' });
    await kb.keyboard.press('Enter');
    await waitText(kb, '.status-line', 'Deleted kbd');
    t.equal((await d.call('GET', srv('kbd'))).status, 404, 'deleted');
    t.same(kbErrors, [], 'no console error and no exception');
    await kb.close();
  });

  t.test('the pane ran clean', async (t) => {
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
