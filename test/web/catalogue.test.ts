// The servers view with real catalogues (issue 26 items 6 and 7), in real
// Chromium against the real daemon: a server whose instructions are a page
// of markdown (server-everything's own, and an SDK server's holding HTML a
// renderer would run) keeps its card small, its first line shown, the rest
// on demand in a bounded box, all as literal text with no element made from
// it; the facts are the columns `albedo mcp list`, `status` and the /mcp
// screen show (Type, State, Tools, Sign-in, Problem), in labels.js's words,
// the problem in words; what an entry exposes (`server.warnings`) is shown;
// a server's tools are listed from its saved catalogue, no session opened;
// the page loads with no failed request (its favicon served).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { HTTPResponse, Page } from 'puppeteer-core';
import { EVERYTHING, NODE, fixture, newTag, tempHome } from '../helpers.ts';
import { entry, sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { EMPTY, authLabel, problemText, savedStateLabel, toolsLabel, transportOf } from '../../web/shared/labels.js';
import { WAIT, axeViolations, card, go, launchChromium, mintLink, press, screenshot, waitText, watchErrors } from './browser-harness.ts';

t.setTimeout(175_000);

/** Every request of `page` that failed or was answered with a status of 400 or more, but `expected` (a path). */
function watchFailures(page: Page, expected: string[] = []): string[] {
  const failed: string[] = [];
  const pathOf = (u: string): string => new URL(u).pathname;
  page.on('requestfailed', (r) => {
    failed.push(`${r.method()} ${pathOf(r.url())}: ${r.failure()?.errorText ?? 'failed'}`);
  });
  page.on('response', (r: HTTPResponse) => {
    if (r.status() >= 400 && !expected.includes(pathOf(r.url()))) failed.push(`${r.request().method()} ${pathOf(r.url())}: ${r.status()}`);
  });
  return failed;
}

/** The element's height in CSS pixels. */
const height = (page: Page, selector: string): Promise<number> => page.$eval(selector, (e) => e.getBoundingClientRect().height);

/** Elements inside `selector` that markup in a server's text would have made: any inside the text shown, an img, script or b anywhere. */
const madeFromMarkup = (page: Page, selector: string): Promise<string[]> =>
  page.$eval(selector, (e) => [...e.querySelectorAll('.first-line *, .whole *, img, script, b, iframe')].map((x) => x.outerHTML));

t.test('the servers view with real catalogues', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  // A server that cannot start as saved (its variable is not set): its problem in words.
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify(
      {
        mcp: {
          servers: {
            broken: { command: '/usr/local/bin/docs-mcp', env: { DOCS_TOKEN: { env: 'ALBEDO_TEST_UNSET_DOCS_TOKEN' } } },
          },
        },
      },
      null,
      2,
    ),
  );
  const d = await startDaemon(t, home, { tag });
  const put = async (name: string, body: Record<string, unknown>): Promise<void> => {
    const r = await d.call('PUT', srv(name), { body });
    t.equal(r.status, 201, `${name} saved: ${r.text.slice(0, 300)}`);
  };
  await put('notes', entry(NODE, [fixture('instructions-server.ts')]));
  await put('everything', entry(NODE, [EVERYTHING, 'stdio']));
  // An argument naming $ALBEDO_HOME: the entry exposes daemon.json (server.warnings).
  await put('exposed', sdkServer({ args: [fixture('sdk-server.ts'), home] }));
  const listed = (await d.call('GET', '/v1/mcp/servers')).body.servers as any[];
  const api = (name: string): any => listed.find((s) => s.name === name);
  t.ok(api('exposed').warnings.length > 0, 'the daemon warns about the exposed entry');
  t.ok(api('everything').description.length > 1000, "server-everything's description is its instructions, a page long");

  const chromium = await launchChromium(t);
  const page = await chromium.browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.setDefaultTimeout(WAIT);
  const errors = watchErrors(page);
  const failed = watchFailures(page);
  const icons: string[] = [];
  page.on('response', (r) => {
    if (/favicon/.test(r.url())) icons.push(`${new URL(r.url()).pathname} ${r.status()} ${r.headers()['content-type']}`);
  });
  await page.goto(await mintLink(d));
  await page.waitForSelector('#servers-title');
  await waitText(page, card('notes'), 'tools');
  await waitText(page, card('broken'), 'ALBEDO_INVALID_CONFIG');

  t.test('a page of instructions: the first line, small, as text', async (t) => {
    for (const name of ['notes', 'everything']) {
      const h = await height(page, card(name));
      t.ok(h < 480, `the card of ${name} stays small (${h}px)`);
      const clip = await height(page, `${card(name)} .clipped.description`);
      t.ok(clip < 48, `its description takes one line (${clip}px)`);
    }
    const first = await page.$eval(`${card('notes')} .description .first-line`, (e) => e.textContent);
    t.equal(first, '# Notes server: **read this first** before calling any tool', 'the first line, its markdown as typed');
    t.notOk(await page.$(`${card('notes')} .whole`), 'the rest is not shown');

    await press(page, 'More of the description of notes');
    const whole = await page.waitForSelector(`${card('notes')} .whole`);
    const text = await whole!.evaluate((e) => (e as HTMLElement).innerText);
    t.match(text, '<img src=x onerror="window.albedoPwned=1">', 'HTML in it is shown as the characters sent');
    t.match(text, '<script>window.albedoPwned=2</script>');
    t.match(text, '**source**', 'markdown too');
    t.same(await madeFromMarkup(page, card('notes')), [], 'no element is made from it');
    t.equal(await page.evaluate(() => (window as unknown as { albedoPwned?: number }).albedoPwned), undefined, 'nothing in it ran');
    const box = await whole!.evaluate((e) => ({ client: e.clientHeight, scroll: e.scrollHeight }));
    t.ok(box.client <= 300 && box.scroll > box.client, `the whole text scrolls inside a bounded box (${box.client} of ${box.scroll}px)`);
    t.ok((await height(page, card('notes'))) < 800, 'the card grows by that box only');
    t.equal(
      await page.$eval(`${card('notes')} button.more`, (e) => e.getAttribute('aria-expanded')),
      'true',
      'the control says it is expanded',
    );
    t.same(await axeViolations(page), [], 'no axe violation, expanded');
    await press(page, 'Less of the description of notes');
    await page.waitForFunction((sel) => !document.querySelector(sel), {}, `${card('notes')} .whole`);
  });

  t.test('the columns of mcp list, in its words; warnings; the problem in words', async (t) => {
    for (const s of listed) {
      const facts = await page.$eval(card(s.name), (e) =>
        [...e.querySelectorAll('dl.facts > div')].map((f) => {
          // What is seen: the words a screen reader alone gets (" of NAME") left out.
          const dd = f.querySelector('dd')!.cloneNode(true) as HTMLElement;
          for (const h of dd.querySelectorAll('.visually-hidden, [aria-hidden="true"]')) h.remove();
          return [f.querySelector('dt')!.textContent, (dd.textContent ?? '').replace(/\s+/g, ' ').trim()];
        }),
      );
      t.same(
        facts.map(([dt]) => dt),
        ['Type', 'State', 'Tools', 'Sign-in', 'Problem'],
        `${s.name}: the columns, in order`,
      );
      const transport = transportOf(s.config);
      t.equal(facts[0]![1], transport, `${s.name}: its type`);
      t.equal(facts[1]![1], savedStateLabel(s.state).text, `${s.name}: its state in labels.js's words`);
      t.equal(facts[2]![1], toolsLabel(s.tools), `${s.name}: its tools`);
      t.equal(facts[3]![1], authLabel(s.auth, transport).text, `${s.name}: its sign-in`);
      if (s.lastError) {
        t.match(facts[4]![1], problemText(s).split('\n')[0], `${s.name}: the problem is the reason, in words (labels.js's problemText)`);
        t.match(facts[4]![1], s.lastError.code, 'and its code');
      } else t.equal(facts[4]![1], EMPTY, `${s.name}: no problem is the empty mark`);
    }
    const warned = await page.$eval(card('exposed'), (e) => (e.querySelector('.entry-warnings') as HTMLElement | null)?.innerText ?? '');
    t.match(warned, 'Warning', 'the exposed entry shows a warning');
    t.match(warned, api('exposed').warnings[0].message, "in the daemon's words (server.warnings)");
    t.notOk(await page.$(`${card('notes')} .entry-warnings`), 'an entry that exposes nothing shows none');
    t.same(await axeViolations(page), [], 'no axe violation');
  });

  t.test("a server's tools, without a session", async (t) => {
    t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session before');
    t.notOk(await page.$(`${card('broken')} dd.tools a`), 'no catalogue saved: no tools to list');
    await press(page, '2 tools of notes', 'link');
    await page.waitForSelector('#tools-title');
    await page.waitForFunction(() => document.activeElement?.id === 'tools-title');
    const search = 'li.tool[data-tool="search_notes"]';
    const item = await waitText(page, search, 'search_notes');
    t.match(item, 'Search the notes by words.', "a tool's description, its first line");
    t.notMatch(item, 'And a third line', 'the rest on demand');
    const params = await page.$eval(`${search} ul.params`, (e) => (e as HTMLElement).innerText);
    t.match(params, /query\s+string, required\s+Words to look for/, 'a parameter: name, type, required, description');
    t.match(params, /limit\s+number\s+At most this many notes/, 'an optional one');
    t.match(await waitText(page, 'li.tool[data-tool="list_notes"]', 'list_notes'), 'No parameters.');
    await press(page, 'More of the description of search_notes');
    t.match(
      await waitText(page, `${search} .whole`, 'third line'),
      'The second line says <b>more</b> about ranking.',
      'shown whole, as text',
    );
    t.same(await madeFromMarkup(page, 'main'), [], "no element is made from a server's text");
    t.ok((await height(page, '.clipped.instructions')) < 48, 'the instructions take one line');
    await press(page, 'More of the instructions of notes');
    t.match(
      await waitText(page, '.instructions .whole', 'The end of the instructions.'),
      '<img src=x onerror=',
      "whole (past the list's 2,048 characters), as text",
    );
    t.same(await madeFromMarkup(page, 'main'), [], 'still no element made from it');
    t.same(await axeViolations(page), [], 'no axe violation');
    t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session was opened');

    // A real catalogue: server-everything's, its instructions a page of markdown.
    await go(page, '#/tools/everything', '#tools-title');
    await waitText(page, 'ul.tools-list', 'echo');
    t.ok((await height(page, '.clipped.instructions')) < 48, "server-everything's instructions take one line");
    t.same(await axeViolations(page), [], 'no axe violation');
    await screenshot(page, 'tools');
    t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'still no session');

    await go(page, '#/tools/broken', '#tools-title');
    t.match(await waitText(page, 'main', 'No catalogue is saved'), 'broken', 'none saved: said so');
    await go(page, '#/servers', '#servers-title');
  });

  t.test('no failed request; the favicon is served', async (t) => {
    t.same(failed, [], 'no request failed or was refused');
    await page.reload();
    await page.waitForSelector('#servers-title');
    await waitText(page, card('notes'), 'tools');
    t.same(failed, [], 'nor after a reload');
    t.ok(icons.length > 0, 'the browser asked for the icon');
    t.match(icons, [/^\/ui\/favicon\.svg 200 image\/svg\+xml$/], 'the icon is served');
    // The page of a spent link (a 403, as it should be) names the icon too.
    const other = await chromium.browser.newPage();
    const otherFailed = watchFailures(other, ['/ui/login']);
    const link = await mintLink(d);
    await other.goto(link);
    await other.waitForSelector('#servers-title');
    await other.goto(link);
    await other.waitForSelector('h1');
    t.match(await other.$eval('h1', (e) => e.textContent), 'cannot be used');
    t.equal(await other.$eval('link[rel="icon"]', (e) => e.getAttribute('href')), '/ui/favicon.svg');
    t.same(otherFailed, [], 'nothing else failed');
    await other.close();
  });

  t.test('the pane ran clean', async (t) => {
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
