// The pane's Extensions view (issue 23) in real Chromium against a real
// daemon, as the /mcp screen's X view: both extensions (`mcp`, `editor-mcp`)
// with their defaults for every session and, for an open session, its own
// choice and what is in force. A session's editor-mcp switched off in the
// pane is seen through the API as chosen:false/effective:false, its default
// given back as chosen:null; a default switched off is written to
// extensions.json and given back takes the key out. A refusal by the daemon
// (a reload that cannot prepare the settings; a broken extensions.json)
// shows its code and changes nothing. axe finds no violation, the page logs
// no error. With ALBEDO_SCREENSHOTS=extensions it saves docs/screenshots/extensions.png.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'puppeteer-core';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from '../daemon/harness.ts';
import { axeViolations, bytes, go, launchChromium, openPane, press, screenshot, waitText } from './browser-harness.ts';

t.setTimeout(175_000);

const row = (name: string, within: string): string => `${within} tr[data-extension=${JSON.stringify(name)}]`;
const DEFAULTS = 'table[data-defaults]';
const sessionCard = (id: string): string => `li[data-session=${JSON.stringify(id)}]`;

/** The session's extensions as the daemon reports them. */
const extensionsOf = async (d: Daemon, id: string): Promise<any> => (await d.call('GET', `/v1/sessions/${id}`)).body.extensions;

/** The text of a row's cell (its class), once the row exists. */
const cellText = (page: Page, sel: string, cls: string): Promise<string> =>
  page.$eval(`${sel} .${cls}`, (e) => (e as HTMLElement).innerText.trim());

t.test('the Extensions view', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201, 'a configured server');
  const opened = await d.call('POST', '/v1/sessions', { body: {} });
  t.equal(opened.status, 201, opened.text);
  const id = opened.body.id as string;
  const short = id.slice(0, 8);
  const card = sessionCard(id);
  const file = path.join(home, 'extensions.json');

  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  await press(page, 'Extensions', 'link');
  await page.waitForSelector('#extensions-title');
  t.equal(await page.$eval('nav a[aria-current="page"]', (a) => a.textContent), 'Extensions', 'its tab is current');

  t.test('both extensions, their defaults and the session', async (t) => {
    await page.waitForSelector(row('editor-mcp', DEFAULTS));
    t.same(
      await page.$$eval(`${DEFAULTS} tbody tr`, (rows) => rows.map((r) => r.getAttribute('data-extension'))),
      ['mcp', 'editor-mcp'],
      'both extensions, in the order every view lists them',
    );
    for (const name of ['mcp', 'editor-mcp']) t.match(await cellText(page, row(name, DEFAULTS), 'default'), /\bon$/, `${name}: on`);
    await page.waitForSelector(row('editor-mcp', card));
    for (const name of ['mcp', 'editor-mcp']) {
      t.equal(await cellText(page, row(name, card), 'chosen'), 'the default', `${name}: no choice of the session's own`);
      t.match(await cellText(page, row(name, card), 'effective'), /\bon$/, `${name}: in force`);
    }
    t.same(await axeViolations(page), [], 'no axe violation');
  });

  t.test("a session's editor-mcp switched off, then given back to the default", async (t) => {
    await press(page, `Switch off editor-mcp for session ${short}`);
    await waitText(page, '.status-line', 'switched off');
    t.same((await extensionsOf(d, id))['editor-mcp'], { chosen: false, effective: false }, 'the daemon: chosen off, not in force');
    t.same((await extensionsOf(d, id)).mcp, { chosen: null, effective: true }, 'mcp untouched');
    t.match(await cellText(page, row('editor-mcp', card), 'chosen'), /\boff$/, 'the pane shows the choice');
    t.match(await cellText(page, row('editor-mcp', card), 'effective'), /\boff$/);
    t.same(await axeViolations(page), [], 'no axe violation with a choice shown');
    await screenshot(page, 'extensions');

    await press(page, `Use the default for editor-mcp in session ${short}`);
    await waitText(page, '.status-line', 'the default decides again');
    t.same((await extensionsOf(d, id))['editor-mcp'], { chosen: null, effective: true }, 'the daemon: no choice, in force again');
    // The row's own cell, word for word: the row as a whole says "the default" from the start, in its
    // "Use the default" button, and the status line is said before the view has read the daemon again.
    await page.waitForFunction(
      (sel) => (document.querySelector(sel) as HTMLElement | null)?.innerText.trim() === 'the default',
      {},
      `${row('editor-mcp', card)} .chosen`,
    );
    t.equal(await page.$(`${row('editor-mcp', card)} button:nth-of-type(2)`), null, 'nothing to give back any more');
  });

  t.test('a default switched off for every session, then the built-in default again', async (t) => {
    await press(page, 'Switch off editor-mcp for every session');
    await waitText(page, '.status-line', 'for every session');
    t.equal((await d.call('GET', '/v1/mcp')).body.enabled['editor-mcp'], false, 'the daemon: off by default');
    t.equal(JSON.parse(readFileSync(file, 'utf8')).enabled['editor-mcp'], false, 'written to extensions.json');
    // Open sessions take the settings in by a reload of their own: waited for, not assumed done with the answer.
    await until(async () => (await extensionsOf(d, id))['editor-mcp'].effective === false, 60_000, 'the session to follow');
    t.same((await extensionsOf(d, id))['editor-mcp'], { chosen: null, effective: false }, 'the session follows its default');
    await page.waitForFunction(
      (sel) => /\boff$/.test((document.querySelector(sel) as HTMLElement | null)?.innerText.trim() ?? ''),
      {},
      `${row('editor-mcp', card)} .effective`,
    );
    t.pass('the pane shows it not in force for the session');

    await press(page, 'Built-in default (on) for editor-mcp');
    await waitText(page, '.status-line', 'back to the built-in default');
    t.equal((await d.call('GET', '/v1/mcp')).body.enabled['editor-mcp'], true);
    t.notOk('editor-mcp' in (JSON.parse(readFileSync(file, 'utf8')).enabled ?? {}), 'the key left the file');
  });

  t.test("a refused switch shows the daemon's code and changes nothing", async (t) => {
    // A server whose variable is not set: valid JSON, but no session can be prepared with it, so the reload fails.
    const config = JSON.parse(readFileSync(file, 'utf8'));
    config.mcp.servers.docs = sdkServer({ env: { DOCS_TOKEN: { env: 'ALBEDO_TEST_UNSET_DOCS_TOKEN' } } });
    writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
    const before = bytes(file);
    // The daemon takes a hand edit in by watching the file: the switch is pressed once it has.
    await until(
      async () => (await d.call('GET', '/v1/mcp/servers')).body.servers.some((x: { name: string }) => x.name === 'docs'),
      60_000,
      'the daemon to read the edit',
    );
    await press(page, `Switch off editor-mcp for session ${short}`);
    t.match(await waitText(page, '.refusal [role="alert"]', 'ALBEDO_'), /ALBEDO_INVALID_CONFIG/, 'the code the daemon answered');
    t.same((await extensionsOf(d, id))['editor-mcp'], { chosen: null, effective: true }, 'the choice is unchanged');
    t.equal(await cellText(page, row('editor-mcp', card), 'chosen'), 'the default', 'and the pane shows it unchanged');
    t.same(bytes(file), before, 'extensions.json unchanged');

    // A broken file: the defaults cannot be written; the pane says the file is broken, and the refusal's code.
    writeFileSync(file, '{ "mcp": ', { mode: 0o600 });
    const broken = bytes(file);
    await until(async () => ((await d.call('GET', '/v1/mcp')).body.invalid ?? []).length > 0, 60_000, 'the daemon to see it broken');
    await waitText(page, 'main', 'extensions.json is broken');
    await press(page, 'Switch off mcp for every session');
    await page.waitForFunction(() =>
      [...document.querySelectorAll('.refusal [role="alert"] code')].some((c) => c.textContent === 'ALBEDO_INVALID_CONFIG'),
    );
    await page.waitForFunction(() => document.querySelector('section')?.getAttribute('aria-busy') === 'false');
    t.equal((await d.call('GET', '/v1/mcp')).body.enabled.mcp, true, 'the default is unchanged');
    t.same(bytes(file), broken, 'the broken file is left as it was');
    t.same(await axeViolations(page), [], 'no axe violation with a refusal shown');
  });

  t.test('the pane ran clean', async (t) => {
    await go(page, '#/servers', '#servers-title');
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
