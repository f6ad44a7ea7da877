// The session view in real Chromium (issue 12 item 2: "a session view
// showing a session's advertised tools (name, description, schema) and its
// MCP context"): open a session for a profile from the pane, see a tool's
// advertised name, its description and its input schema, the servers' live
// states and the context text; a tool the server adds later appears by the
// session's event stream (capabilities_changed) without a reload; close the
// session from the pane.
import t from 'tap';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import type { ElementHandle } from 'puppeteer-core';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { go, launchChromium, openPane, press, waitText } from './browser-harness.ts';

t.setTimeout(170_000);

t.test('the session view', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201);
  // A server the session leaves out (it needs a sign-in): the view shows why, in the daemon's words.
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  t.equal((await d.call('PUT', srv('secure'), { body: { url: stack.mcpUrl, oauth: { callbackPort: 0 } } })).status, 201);
  const chromium = await launchChromium(t);
  const { page, errors } = await openPane(chromium.browser, d);
  let id = '';

  t.test('open a session for a profile', async (t) => {
    await press(page, 'Sessions', 'link');
    await page.waitForSelector('#sessions-title');
    t.match(await waitText(page, 'main', 'No session is open'), /No session is open/);
    await page.select('#profile', 'anthropic');
    await press(page, 'Open a session');
    await page.waitForSelector('#session-title');
    id = decodeURIComponent(new URL(page.url()).hash.replace('#/sessions/', ''));
    const sessions = (await d.call('GET', '/v1/sessions')).body.sessions;
    t.same(
      sessions.map((s: { id: string; profile: string }) => [s.id, s.profile]),
      [[id, 'anthropic']],
      'the daemon opened it for that profile',
    );
  });

  t.test('its tools, their schemas, the servers and the context', async (t) => {
    const advertised = (await d.call('GET', `/v1/sessions/${id}/tools`)).body.tools as Array<{ name: string }>;
    const echo = advertised.find((x) => /^mcp_sdk_echo_/.test(x.name))!;
    t.ok(echo, 'the daemon advertises echo');
    const text = await waitText(page, 'main', echo.name);
    t.match(text, /Echo the text back/, "the tool's description");
    t.match(text, /Profile anthropic/, 'the profile');
    t.match(await waitText(page, 'ul.live', 'sdk'), /connected|advertised/, "the server's live state");
    const secure = await waitText(page, 'ul.live', 'secure');
    t.match(secure, /secure\s+\S?\s*needs sign-in/, 'a server left out, with its live state');
    t.match(secure, /ALBEDO_NEEDS_SIGN_IN/, 'and the reason the daemon gives (its code)');
    t.match(await waitText(page, 'ul.warnings', 'secure'), /secure/, "the session's warnings");
    const found = await page.waitForFunction(
      (name) => [...document.querySelectorAll('li.tool')].find((li) => li.querySelector('code')?.textContent === name),
      {},
      echo.name,
    );
    const item = found.asElement() as ElementHandle<Element>;
    const summary = await item.waitForSelector('summary');
    t.equal(await item.evaluate((li) => (li.querySelector('details') as HTMLDetailsElement).open), false, 'the schema is folded');
    await summary!.click();
    const schema = JSON.parse(await item.evaluate((li) => (li.querySelector('pre.schema') as HTMLElement).innerText));
    t.match(schema, { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, 'the input schema, shown unfolded');
    t.match(await page.$eval('pre.context', (e) => (e as HTMLElement).innerText), /Server "sdk": \d+ tools/, 'the MCP context text');
  });

  t.test('a tool added later appears by the event stream', async (t) => {
    t.equal(
      await page.$$eval('li.tool h3 code', (els) => els.some((e) => /^mcp_sdk_late_tool_/.test(e.textContent ?? ''))),
      false,
      'no late_tool yet',
    );
    const added = await d.call('POST', `/v1/sessions/${id}/calls`, { body: { name: 'sdk/add_tool' } });
    t.equal(added.status, 200, 'the server registers late_tool (and says its tool list changed)');
    // The session takes the change in at the end of a turn, once it knows of it (pending), as a model's host would.
    await until(
      async () =>
        (await d.call('GET', `/v1/sessions/${id}`)).body.servers.find((s: { name: string }) => s.name === 'sdk')?.pending === true,
      60_000,
      'the change to be pending',
    );
    t.equal((await d.call('POST', `/v1/sessions/${id}/activity`, { body: { kind: 'turn_end' } })).status, 200);
    // By name: add_tool's own description mentions late_tool.
    await page.waitForFunction(() =>
      [...document.querySelectorAll('li.tool h3 code')].some((e) => /^mcp_sdk_late_tool_/.test(e.textContent ?? '')),
    );
    t.pass('late_tool is listed');
    t.match(await waitText(page, 'ol.events', 'capabilities_changed'), /capabilities_changed/, 'the event is listed');
  });

  t.test('close the session', async (t) => {
    await press(page, 'Close this session');
    await page.waitForSelector('#sessions-title');
    await waitText(page, '.status-line', 'closed');
    t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'the daemon closed it');
    t.match(await waitText(page, 'main', 'No session is open'), /No session is open/);
  });

  t.test('the pane ran clean', async (t) => {
    await go(page, '#/servers', '#servers-title');
    t.same(errors, [], 'no console error and no exception');
    t.same(await chromium.close(), [], 'no chromium process outlives the test');
  });
});
