// The pane's Gateways view (issue 22 item 8) in real Chromium against a real
// daemon: each gateway with its kind, what it serves, its problem, the ways
// in, its tokens and the clients connected now — a real MCP client (the
// official SDK's stdio client through `albedo gateway direct`) whose declared
// name is hostile markup and a reordering character, shown as text. A token
// made in the pane is shown once (and works: a real HTTP MCP client connects
// with it), Done forgets it; revoking asks first (Esc keeps the token), then
// the daemon refuses it (401). axe finds no violation, the page logs no error.
// With ALBEDO_SCREENSHOTS=gateways it saves docs/screenshots/gateways.png.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as Client2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { BIN, sdkServer, startDaemon, type Daemon } from '../daemon/harness.ts';
import { axeViolations, byRole, go, launchChromium, openPane, press, screenshot, shown, waitText } from './browser-harness.ts';

t.setTimeout(175_000);

const card = (name: string): string => `li[data-gateway=${JSON.stringify(name)}]`;

/** Connects a real MCP client over HTTP to gateway `name` with `token`: its tools' count, or the error it met. */
async function overHttp(d: Daemon, name: string, token: string): Promise<number | Error> {
  const c = new Client2({ name: 'http-host', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  const url = new URL(`http://127.0.0.1:${d.info.port}/mcp/gateways/${name}`);
  try {
    await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    const n = (await c.listTools()).tools.length;
    await c.close();
    return n;
  } catch (e) {
    await c.close().catch(() => undefined);
    return e as Error;
  }
}

t.test('the Gateways view', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const gateways = { all: { servers: { exclude: ['ghost'] } }, direct: { server: 'sdk' } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } }, gateways }), { mode: 0o600 });
  const d = await startDaemon(t, home, { tag });

  const env = { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag } as Record<string, string>;
  const client = new Client({ name: '<b>pane-host</b>\u202e', version: '2.0' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(new StdioClientTransport({ command: NODE, args: [BIN, 'gateway', 'direct'], env }));
  t.teardown(() => client.close());
  const era = client.getNegotiatedProtocolVersion()!;
  await client.callTool({ name: 'echo', arguments: { text: 'one' } });

  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  await press(page, 'Gateways', 'link');
  await page.waitForSelector('#gateways-title');
  t.equal(await page.$eval('nav a[aria-current="page"]', (a) => a.textContent), 'Gateways', 'its tab is current');

  const all = await waitText(page, card('all'), 'No token');
  t.match(all, /Kind\s+composed/);
  t.match(all, /Serves\s+every enabled server but ghost, composed into one session/);
  t.match(all, /no server "ghost" is configured/, 'its problem');
  t.match(all, /albedo gateway all/, 'the stdio way in');
  t.ok(all.includes(`http://127.0.0.1:${d.info.port}/mcp/gateways/all`), 'the HTTP way in');
  t.match(all, /No client is connected/);

  const direct = await waitText(page, card('direct'), 'pane-host');
  t.match(direct, /Kind\s+pass-through/);
  t.match(direct, /Serves\s+the server sdk, under its own names/);
  const row = await page.$eval(`${card('direct')} table.clients tbody tr`, (tr) =>
    [...tr.querySelectorAll('td')].map((td) => (td as HTMLElement).innerText),
  );
  t.same(row.slice(0, 3), ['<b>pane-host</b>\\u202e 2.0', era, 'stdio'], 'the client’s own name as text: markup and the control spelled');
  t.match(row[3], /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'since');
  t.equal(row[4], '1', 'one call');
  t.equal(await page.$$eval(`${card('direct')} b`, (b) => b.length), 0, 'no element made of the client’s name');
  await client.callTool({ name: 'echo', arguments: { text: 'two' } });
  await page.waitForFunction(
    (sel) => (document.querySelector(sel) as HTMLElement | null)?.innerText === '2',
    { polling: 100 },
    `${card('direct')} table.clients tbody tr td:last-child`,
  );
  t.pass('read again while open: the second call shows');

  // A token, made here and shown once.
  await press(page, 'Make a token for all');
  const input = await page.waitForSelector('#new-token-all');
  const token = await input!.evaluate((e) => (e as HTMLInputElement).value);
  t.match(token, /^albgw_[A-Za-z0-9_-]{43}$/, 'the token');
  t.ok(await input!.evaluate((e) => document.activeElement === e), 'focused, to copy');
  t.match(await shown(page), /Copy it now: it is shown this once/);
  const listed = (await d.call('GET', '/v1/gateways/all')).body.tokens;
  t.equal(listed.length, 1, 'the daemon has it');
  t.match(await waitText(page, card('all'), listed[0].id), /made \d{4}-\d\d-\d\d \d\d:\d\d UTC/, 'listed by id and date');
  t.equal(typeof (await overHttp(d, 'all', token)), 'number', 'a real HTTP client connects with it');
  t.same(await axeViolations(page), [], 'axe: no violation with a token shown');
  await screenshot(page, 'gateways');
  await press(page, 'Done with the token of all');
  await page.waitForFunction(() => !document.querySelector('#new-token-all'));
  t.notOk((await page.content()).includes(token), 'gone from the page');

  // Revoke: asked first; Esc keeps it.
  await press(page, `Revoke token ${listed[0].id} of all`);
  await page.waitForSelector('dialog.confirm[open]');
  t.match(await page.$eval('#confirm-title', (e) => e.textContent), `Revoke token ${listed[0].id} of all?`);
  t.same(await axeViolations(page), [], 'axe: no violation with the dialog open');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('dialog.confirm'));
  t.equal((await d.call('GET', '/v1/gateways/all')).body.tokens.length, 1, 'Esc: kept');
  await press(page, `Revoke token ${listed[0].id} of all`);
  await page.waitForSelector('dialog.confirm[open]');
  await press(page, 'Revoke the token');
  t.match(await waitText(page, '.status-line', 'Revoked token'), /refused from now on/);
  await waitText(page, card('all'), 'No token');
  t.equal((await d.call('GET', '/v1/gateways/all')).body.tokens.length, 0, 'revoked');
  const refused = await overHttp(d, 'all', token);
  t.equal((refused as { status?: number }).status, 401, `refused: ${String(refused)}`);

  await byRole(page, 'heading', 'Gateways');
  t.same(errors, [], 'the page logged no error');
});
