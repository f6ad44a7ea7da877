// The servers view and its form, in real Chromium against the real daemon
// (issue 12 item 2; docs/design.md, "The server form"): add a stdio server
// (the official SDK's, typed as a shell command line, with env secrets) and
// an http one (with a bearer token) through the form; each shows in the list
// with its state and tools, and no secret value is in the page or in
// extensions.json (creds.json holds them). Edit: a blank secret keeps the
// stored one, "remove" removes it. Disable, enable, and delete after a
// confirmation (Esc cancels it first).
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { srv, startDaemon } from '../daemon/harness.ts';
import { suggestName } from '../../web/shared/labels.js';
import { card, go, launchChromium, openPane, press, typeInto, waitText } from './browser-harness.ts';

t.setTimeout(175_000);

const read = (home: string, f: string): string => readFileSync(path.join(home, f), 'utf8');

t.test('servers: add, edit, disable, enable, delete', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const bearer = `bearer-${newTag()}`;
  const http = await httpFixture(t, tag, fixture('sdk-http-server.ts'), ['--bearer', bearer]);
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  const envSecret = `env-secret-${newTag()}`;

  t.test('add a stdio server through the form', async (t) => {
    await press(page, 'Add a server', 'link');
    await page.waitForSelector('#form-title');
    t.equal(await page.$eval('#transport-http', (e) => (e as HTMLInputElement).checked), true, 'http is the default');
    await page.locator('#transport-stdio').click();
    const line = `${NODE} "${fixture('sdk-server.ts')}"`;
    await typeInto(page, '#command', line);
    t.equal(
      await page.$eval('#name', (e) => (e as HTMLInputElement).value),
      suggestName('stdio', line),
      'the name is suggested from the command',
    );
    await typeInto(page, '#name', 'sdk');
    await page.focus('#command');
    await page.keyboard.type(' ');
    t.equal(await page.$eval('#name', (e) => (e as HTMLInputElement).value), 'sdk', 'an edited name is no longer replaced');
    await press(page, 'Add an env entry');
    await press(page, 'Add an env entry');
    const rows = await page.$$eval('fieldset.env-row input[id$="-key"]', (els) => els.map((e) => e.id));
    t.equal(rows.length, 2, 'two env rows');
    await typeInto(page, `#${rows[0]}`, 'ALBEDO_TEST_TAG');
    await typeInto(page, `#${rows[0]!.replace(/-key$/, '-value')}`, tag);
    await typeInto(page, `#${rows[1]}`, 'SDK_SECRET');
    await typeInto(page, `#${rows[1]!.replace(/-key$/, '-value')}`, envSecret);
    const typeOf = (id: string) => page.$eval(`#${id.replace(/-key$/, '-value')}`, (e) => (e as HTMLInputElement).type);
    t.equal(await typeOf(rows[1]!), 'text', 'a value shows as typed until it is marked secret');
    await page.locator(`#${rows[1]!.replace(/-key$/, '-secret')}`).click();
    t.equal(await typeOf(rows[1]!), 'password', 'marked secret: masked');
    t.equal(await typeOf(rows[0]!), 'text', 'the other one still shows');
    await press(page, 'Save');
    await page.waitForSelector('[aria-busy="true"]').catch(() => undefined);
    await page.waitForSelector(card('sdk'));
    const text = await waitText(page, card('sdk'), '5 tools');
    t.match(text, /discovered/, 'its saved state');
    t.match(text, /stdio/, 'its transport');
    t.match(await waitText(page, '.status-line', 'Saved sdk'), /connected/, 'the status says it connected');
    t.notOk((await page.content()).includes(envSecret), 'the secret is nowhere in the page');
    t.notOk((await page.content()).includes(tag), 'nor the other one');
    t.notOk(read(home, 'extensions.json').includes(envSecret), 'nor in extensions.json');
    t.ok(read(home, 'creds.json').includes(envSecret), 'creds.json holds it');
  });

  t.test('add an http server with a bearer token', async (t) => {
    await press(page, 'Add a server', 'link');
    await page.waitForSelector('#url');
    await typeInto(page, '#url', http.url);
    t.equal(
      await page.$eval('#name', (e) => (e as HTMLInputElement).value),
      `local-${new URL(http.url).port}`,
      'the name is suggested from the URL: this machine and its port, never the address',
    );
    await typeInto(page, '#name', 'remote');
    await typeInto(page, '#bearer', bearer);
    t.equal(
      await page.$eval('#bearer', (e) => [(e as HTMLInputElement).type, e.getAttribute('autocomplete')].join(' ')),
      'password new-password',
    );
    await press(page, 'Save');
    const text = await waitText(page, card('remote'), 'tools');
    t.match(text, /discovered/);
    t.match(text, /fixed credentials/, 'a stored bearer is a fixed Authorization: no sign-in');
    t.notOk((await page.content()).includes(bearer), 'the token is nowhere in the page');
    t.notOk(read(home, 'extensions.json').includes(bearer), 'nor in extensions.json');
    t.ok(read(home, 'creds.json').includes(bearer), 'creds.json holds it');
  });

  t.test('edit: a blank secret keeps the stored one', async (t) => {
    await press(page, 'Edit remote', 'link');
    await page.waitForSelector('#bearer');
    t.equal(await page.$eval('#name', (e) => (e as HTMLInputElement).readOnly), true, 'the name is fixed');
    t.match(await page.$eval('#bearer-hint', (e) => e.textContent), /stored — leave blank to keep/, 'the stored token is announced');
    t.equal(await page.$eval('#bearer', (e) => (e as HTMLInputElement).value), '', 'but not shown');
    await press(page, 'Save changes');
    t.match(await waitText(page, '.status-line', 'Saved remote'), /connected/, 'tried with the kept token: connected');
    t.ok(read(home, 'creds.json').includes(bearer), 'the token is still stored');
  });

  t.test('edit: remove removes a stored secret', async (t) => {
    await press(page, 'Edit sdk', 'link');
    await page.waitForSelector('input[id$="-remove"]');
    const boxes = await page.$$eval('input[id$="-remove"]', (els) =>
      els.map((e) => [e.id, document.querySelector(`label[for="${e.id}"]`)?.textContent]),
    );
    const box = boxes.find(([, label]) => /SDK_SECRET/.test(label ?? ''));
    t.ok(box, 'a remove box for the stored SDK_SECRET');
    await page.locator(`#${box![0]}`).click();
    await press(page, 'Save changes');
    t.match(await waitText(page, '.status-line', 'Saved sdk'), /connected/);
    t.notOk(read(home, 'creds.json').includes(envSecret), 'creds.json no longer holds it');
    t.same((await d.call('GET', srv('sdk'))).body.secrets.env, ['ALBEDO_TEST_TAG'], 'the other entry is kept');
  });

  t.test('disable, enable', async (t) => {
    await press(page, 'Disable sdk');
    await waitText(page, card('sdk'), 'disabled');
    t.match(await waitText(page, '.status-line', 'Disabled sdk'), /not tried/);
    t.equal(JSON.parse(read(home, 'extensions.json')).mcp.servers.sdk.enabled, false, 'extensions.json says so');
    await press(page, 'Enable sdk');
    t.match(await waitText(page, '.status-line', 'Enabled sdk'), /connected/, 'tried first, then enabled');
    t.match(await waitText(page, card('sdk'), 'discovered'), /5 tools/);
    t.notOk(JSON.parse(read(home, 'extensions.json')).mcp.servers.sdk.enabled === false, 'no longer disabled');
  });

  t.test('delete, after a confirmation', async (t) => {
    await press(page, 'Delete remote');
    await page.waitForSelector('dialog[open]');
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel', 'the dialog focuses its first control');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));
    t.ok(await page.$(card('remote')), 'Esc cancels: still there');
    t.ok(JSON.parse(read(home, 'extensions.json')).mcp.servers.remote, 'and still saved');

    await press(page, 'Delete remote');
    const dialog = await page.waitForSelector('dialog[open]');
    await (await dialog!.waitForSelector('::-p-aria([name="Delete remote"][role="button"])'))!.click();
    await waitText(page, '.status-line', 'Deleted remote');
    await page.waitForFunction((sel) => !document.querySelector(sel), {}, card('remote'));
    t.notOk(JSON.parse(read(home, 'extensions.json')).mcp.servers.remote, 'gone from extensions.json');
    t.notOk(read(home, 'creds.json').includes(bearer), 'and its token from creds.json');
    t.ok(await page.$(card('sdk')), 'the other server stays');
  });

  t.test('the pane ran clean', async (t) => {
    await go(page, '#/servers', '#servers-title');
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
