// The pane's Gateways view in real Chromium against a real daemon, for what a careless hand or a hostile name makes
// of it: a gateway written by hand with `include: []` is said to serve "no server" (not ", composed…" with nothing
// before it); gateways named like an object's own properties (`constructor`, `toString`) are cards like any other;
// and a token made in the pane is gone from the page, its storage and its history once the view is left.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { go, launchChromium, openPane, press, waitText } from './browser-harness.ts';

t.setTimeout(150_000);

const card = (name: string): string => `li[data-gateway=${JSON.stringify(name)}]`;

t.test('the Gateways view, carelessly fed', async (t) => {
  const home = tempHome(t);
  const gateways = { none: { servers: { include: [] } }, constructor: {}, toString: { servers: { include: ['x'] } } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ gateways }), { mode: 0o600 });
  const d = await startDaemon(t, home, { tag: newTag() });
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  await go(page, '#/gateways', '#gateways-title');

  t.match(await waitText(page, card('none'), 'Serves'), /Serves\s+no server, composed into one session/);
  t.match(await waitText(page, card('constructor'), 'Serves'), /Serves\s+every enabled server, composed into one session/);
  t.match(await waitText(page, card('toString'), 'Serves'), /Serves\s+x, composed into one session/);
  t.equal(await page.$$eval('li[data-gateway]', (l) => l.length), 3, 'three cards');

  await press(page, 'Make a token for constructor');
  const input = await page.waitForSelector('#new-token-constructor');
  const token = await input!.evaluate((e) => (e as HTMLInputElement).value);
  t.match(token, /^albgw_/);
  await go(page, '#/servers', 'h1');
  await go(page, '#/gateways', '#gateways-title');
  await waitText(page, card('constructor'), 'made');
  const kept = await page.evaluate(
    () => document.documentElement.outerHTML + JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + location.href,
  );
  t.notOk(kept.includes(token), 'after leaving the view: not in the page, its storage or its address');
  t.same(errors, [], 'the page logged no error');
});
