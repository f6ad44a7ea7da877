// The form's refusals, in real Chromium against the real daemon (issue 12
// item 2; docs/design.md, "Saving a server": the previous settings and
// credentials stay as they were and the form stays open with the error): a mistyped command is tried by the
// daemon's strict save and refused; while the save runs the form shows its
// progress, then the error's code (and the server's stderr, as text) in an
// alert, and the form stays open with what was typed, and extensions.json and
// creds.json are unchanged byte for byte. A command line with an unbalanced
// quote is refused at the field by the CLI's splitter, and no save is sent.
// Markup a server prints is shown as text (no element made, nothing run). An
// edit of a server changed since the form read it is refused (If-Match, 412).
import t from 'tap';
import { NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { go, launchChromium, openPane, press, recordBusy, settingsFiles, typeInto } from './browser-harness.ts';

t.setTimeout(170_000);

t.test('the strict save refuses, the form keeps what was typed', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  // Something saved already, so "unchanged" compares real files (a server and a typed secret).
  const put = await d.call('PUT', srv('sdk'), { body: sdkServer({ secrets: { env: { SDK_KEY: 'stored-value' } } }) });
  t.equal(put.status, 201);
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  /** The settings writes the page sent. */
  const writes: string[] = [];
  page.on('request', (r) => {
    if (r.method() !== 'GET' && r.url().includes('/v1/mcp/servers')) writes.push(`${r.method()} ${r.url()}`);
  });
  const secret = `typed-${newTag()}`;

  t.test('a mistyped command: the alert shows the error, nothing changed', async (t) => {
    const before = settingsFiles(home);
    t.ok(before.extensions && before.creds, 'both files exist');
    await press(page, 'Add a server', 'link');
    await page.locator('#transport-stdio').click();
    const typo = `${NODE} ${fixture('sdk-servr.ts')}`;
    await typeInto(page, '#command', typo);
    await typeInto(page, '#name', 'typo');
    await press(page, 'Add an env entry');
    const key = await page.$eval('fieldset.env-row input[id$="-key"]', (e) => e.id);
    await typeInto(page, `#${key}`, 'TYPO_SECRET');
    await typeInto(page, `#${key.replace(/-key$/, '-value')}`, secret);
    const busy = await recordBusy(page);
    await press(page, 'Save');
    const alert = await page.waitForSelector('form [role="alert"]');
    const text = await alert!.evaluate((e) => (e as HTMLElement).innerText);
    t.match(text, /ALBEDO_SERVER_EXITED/, 'the error code');
    t.match(text, /sdk-servr\.ts/, "the message quotes the server's stderr");
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'alert');
    t.pass('the focus moves to the alert');
    // The progress showed while the daemon tried the server (it started, exited, and its stderr was read).
    t.ok(
      (await busy()).some((b) => b.text.includes('Trying the server…') && b.disabled),
      'meanwhile: "Trying the server…", the save button disabled',
    );
    t.ok(await page.$('#form-title'), 'the form is still open');
    t.equal(await page.$eval('#command', (e) => (e as HTMLInputElement).value), typo, 'with the command as typed');
    t.equal(await page.$eval('#name', (e) => (e as HTMLInputElement).value), 'typo', 'and the name');
    t.equal(await page.$eval('form', (f) => f.getAttribute('aria-busy')), 'false', 'no longer busy');
    t.notOk((await page.content()).includes(secret), 'the typed secret is not in the page');
    t.same(settingsFiles(home), before, 'extensions.json and creds.json are unchanged, byte for byte');
    t.same(
      writes.map((w) => w.split(' ')[0]),
      ['PUT'],
      'one save was sent',
    );
  });

  t.test('an unbalanced quote: the problem at the field, nothing sent', async (t) => {
    const before = settingsFiles(home);
    writes.length = 0;
    await typeInto(page, '#command', `${NODE} "${fixture('sdk-server.ts')}`);
    await press(page, 'Save');
    const problem = await page.waitForSelector('#command-problem');
    t.match(await problem!.evaluate((e) => e.textContent), /quote/, 'the splitter says what is wrong');
    t.equal(await page.$eval('#command', (e) => e.getAttribute('aria-invalid')), 'true', 'the field is marked');
    t.match(await page.$eval('#command', (e) => e.getAttribute('aria-describedby')), /command-problem/, 'and described by it');
    await page.waitForFunction(() => document.activeElement?.id === 'command');
    t.pass('the focus moves to the field');
    t.equal(await page.$('form [role="alert"]'), null, 'no save was tried, so no refusal to show');
    t.same(writes, [], 'no save was sent');
    t.same(settingsFiles(home), before, 'nothing changed');
  });

  t.test('what the server printed is shown as text, never as HTML', async (t) => {
    const html = '<img src=x onerror=window.pwned=1><b id=injected>bold</b>';
    await typeInto(page, '#command', `${NODE} -e "console.error('${html}'); process.exit(3)"`);
    await press(page, 'Save');
    await page.waitForFunction(
      () =>
        /ALBEDO_SERVER_EXITED/.test((document.querySelector('form [role="alert"]') as HTMLElement | null)?.innerText ?? '') &&
        document.activeElement?.getAttribute('role') === 'alert',
    );
    const shown = await page.$eval('form [role="alert"]', (e) => (e as HTMLElement).innerText);
    t.ok(shown.includes(html), 'the alert shows the markup as the server wrote it');
    t.same(await page.$$eval('form [role="alert"] img, #injected', (els) => els.length), 0, 'no element was made of it');
    t.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'and nothing ran');
  });

  t.test('an edit of a version changed meanwhile is refused (If-Match)', async (t) => {
    await press(page, 'Cancel');
    await press(page, 'Edit sdk', 'link');
    await page.waitForSelector('.named');
    const named = await page.$eval('.named', (e) => (e as HTMLElement).innerText);
    t.match(named, /ALBEDO_TEST_TAG ← \$TEST_SERVER_TAG/, "what it reads from the daemon's environment");
    // Another client changes the server after the form read it.
    t.equal((await d.call('PATCH', srv('sdk'), { body: { callTimeoutMs: 12_345 } })).status, 200);
    const before = settingsFiles(home);
    writes.length = 0;
    const stored = await page.$$eval('input[id$="-remove"]', (els) => els.map((e) => e.id));
    await page.locator(`#${stored[0]}`).click();
    await press(page, 'Save changes');
    const alert = await page.waitForSelector('form [role="alert"]');
    t.match(await alert!.evaluate((e) => (e as HTMLElement).innerText), /ALBEDO_PRECONDITION_FAILED/, "the refusal's code");
    t.same(
      writes.map((w) => w.split(' ')[0]),
      ['PATCH'],
      'one PATCH was sent',
    );
    t.same(settingsFiles(home), before, 'nothing changed: the stored secret is still there');
    t.same((await d.call('GET', srv('sdk'))).body.secrets.env, ['SDK_KEY']);
  });

  t.test('cancel leaves the form; the list is as it was', async (t) => {
    await press(page, 'Cancel');
    await page.waitForSelector('#servers-title');
    t.same(
      (await d.call('GET', '/v1/mcp/servers')).body.servers.map((s: { name: string }) => s.name),
      ['sdk'],
      'only the saved server',
    );
    t.same(await page.$$eval('li[data-server]', (els) => els.map((e) => e.getAttribute('data-server'))), ['sdk']);
  });

  t.test('the pane ran clean', async (t) => {
    await go(page, '#/servers', '#servers-title');
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
