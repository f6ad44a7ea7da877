// The pane's tools view (#/tools/NAME) against hostile catalogues (issue 26
// item 7, review), in real Chromium against the real daemon: a description
// and instructions of 5 MB on one line (the one-line view laid all of it
// out; it shows a bounded part now, the whole on More), names and text made
// of markup and `javascript:` URLs, tools named after Object.prototype's keys
// or twice, and a server name holding `/ # ? %2F` and non-ASCII letters,
// reached from its card and by its hash route, with back navigation; the
// More control by keyboard, named for a screen reader, with no axe violation.
import t from 'tap';
import type { Page } from 'puppeteer-core';
import { NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { entry, srv, startDaemon } from '../daemon/harness.ts';
import { WAIT, axeViolations, card, go, launchChromium, mintLink, press, waitText, watchErrors } from './browser-harness.ts';

t.setTimeout(200_000);

const MB5 = 5 * 1024 * 1024;
const ODD = 'a/b#c?d%2Fe ünï 名';

/** The element that has the focus: its tag, its text and its aria-expanded. */
const focused = (page: Page): Promise<{ tag: string; text: string; expanded: string | null }> =>
  page.evaluate(() => {
    const e = document.activeElement as HTMLElement;
    return { tag: e.tagName, text: e.innerText.replace(/\s+/g, ' ').trim(), expanded: e.getAttribute('aria-expanded') };
  });

t.test('the tools view against hostile catalogues', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  for (const [name, mode] of [
    ['huge', 'huge'],
    ['proto', 'proto'],
    [ODD, 'proto'],
  ]) {
    const r = await d.call('PUT', srv(name), { body: entry(NODE, [fixture('catalogue-hostile-server.ts'), mode]) });
    t.equal(r.status, 201, `${name} added: ${r.text.slice(0, 200)}`);
  }
  const chromium = await launchChromium(t);
  const page = await chromium.browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.setDefaultTimeout(WAIT);
  const errors = watchErrors(page);
  await page.goto(await mintLink(d));
  await page.waitForSelector('#servers-title');
  await waitText(page, card('proto'), 'tools');

  t.test('5 MB on one line: a bounded first line, the whole on More', async (t) => {
    await go(page, '#/tools/huge', '#tools-title');
    await waitText(page, 'ul.tools-list', 'The tool after the huge one');
    const lengths = await page.$$eval('.first-line', (es) => es.map((e) => (e.textContent ?? '').length));
    t.ok(Math.max(...lengths) <= 2_000, `no first line lays out megabytes (longest ${Math.max(...lengths)} characters)`);
    const first = await page.$eval('li.tool[data-tool="huge"] .first-line', (e) => e.textContent ?? '');
    t.match(first, /^H{1000,}$/, "the description's start");
    await press(page, 'More of the description of huge');
    const whole = await page.waitForSelector('li.tool[data-tool="huge"] .whole');
    t.equal(await whole!.evaluate((e) => (e.textContent ?? '').length), MB5, 'More shows all of it');
    await press(page, 'Less of the description of huge');
    await page.waitForSelector('li.tool[data-tool="huge"] .first-line');
  });

  t.test('markup, javascript: URLs, prototype names: text, and nothing made of it', async (t) => {
    await go(page, '#/tools/proto', '#tools-title');
    await waitText(page, 'ul.tools-list', 'hasOwnProperty');
    const names = await page.$$eval('li.tool', (es) => es.map((e) => e.getAttribute('data-tool')));
    t.same(names, ['__proto__', 'constructor', 'toString', 'toString', 'hasOwnProperty'], 'every tool, in order, both of one name');
    const main = await page.$eval('main', (e) => (e as HTMLElement).innerText);
    t.match(main, '<img src=x onerror="window.albedoPwned=1"><a href="javascript:window.albedoPwned=2">click</a>', 'markup as text');
    t.match(main, 'x\\u202egnp.exe', 'a bidi control spelled');
    t.same(await page.$$eval('main a', (as) => as.map((a) => a.getAttribute('href'))), ['#/servers'], "the only link is the pane's own");
    t.same(await page.$$eval('main img, main script, main iframe', (es) => es.length), 0, "no element made from the server's text");
    t.equal(await page.evaluate(() => (window as unknown as { albedoPwned?: number }).albedoPwned), undefined, 'nothing ran');

    // The keyboard: from the heading, the way back, then More; Enter opens, Space closes, the focus stays on the control.
    await page.waitForFunction(() => document.activeElement?.id === 'tools-title');
    await page.keyboard.press('Tab');
    t.match(await focused(page), { tag: 'A', text: 'All servers' });
    await page.keyboard.press('Tab');
    t.match(
      await focused(page),
      { tag: 'BUTTON', text: 'More of the instructions of proto', expanded: 'false' },
      'More, named for what it shows',
    );
    await page.keyboard.press('Enter');
    await page.waitForSelector('.instructions .whole');
    t.match(await focused(page), { tag: 'BUTTON', text: 'Less of the instructions of proto', expanded: 'true' }, 'opened; the focus stays');
    t.equal(
      await page.$eval(
        '.instructions .whole',
        (e) => `${e.getAttribute('role')} ${e.getAttribute('aria-label')} ${e.getAttribute('tabindex')}`,
      ),
      'region the instructions of proto 0',
      'the whole text: a named region the keyboard can scroll',
    );
    t.same(await axeViolations(page), [], 'no axe violation, opened');
    await page.keyboard.press(' ');
    await page.waitForFunction(() => !document.querySelector('.instructions .whole'));
    t.match(await focused(page), { tag: 'BUTTON', expanded: 'false' }, 'closed; the focus stays');
    t.same(await axeViolations(page), [], 'no axe violation');
  });

  t.test('a name with / # ? %2F and other letters: from its card, by its route, and back', async (t) => {
    await go(page, '#/servers', '#servers-title');
    await press(page, `5 tools of ${ODD}`, 'link');
    await page.waitForSelector('#tools-title');
    t.equal(await page.$eval('#tools-title', (e) => e.textContent), `Tools of ${ODD}`);
    await waitText(page, 'ul.tools-list', 'hasOwnProperty');
    t.equal(await page.evaluate(() => location.hash), `#/tools/${encodeURIComponent(ODD)}`);
    await page.goBack();
    await page.waitForSelector('#servers-title');
    await go(page, `#/tools/${encodeURIComponent(ODD)}`, '#tools-title');
    await waitText(page, 'ul.tools-list', 'hasOwnProperty');
    // One not configured, and the prototype's own keys (never server names): said so, nothing else.
    for (const name of ['nope', '__proto__', 'constructor']) {
      await go(page, `#/tools/${encodeURIComponent(name)}`, '#tools-title');
      t.match(await waitText(page, '[role="alert"]', 'ALBEDO_NOT_FOUND'), name, `${name}: not found`);
      t.notOk(await page.$('ul.tools-list'), 'no tools shown');
    }
  });

  t.test('the pane ran clean', async (t) => {
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
