// The /mcp screen (`albedo mcp` on a terminal), adding servers through its
// one form as a person would (issue 12; docs/design.md, "The server form"):
// an http server (the official SDK's, demanding a bearer token) with a
// bearer token and a custom header, saved with ctrl+s; a stdio server with
// an env entry shown as typed and a secret one, saved with enter on the last
// field, run in the screen's directory (shown in the form); the values land
// in creds.json, the secrets are never on the screen, in any frame, and none
// is in extensions.json. And the name suggested from the URL host or the
// command's package until the user edits it.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { srv, startDaemon } from '../daemon/harness.ts';
import { fieldText, openScreen, rowOf } from './screen-harness.ts';

t.setTimeout(170_000);

const BEARER = 'tok-bearer-5d1e9a';
const HEADER_VALUE = 'tenant-secret-77c2';
const ENV_SECRET = 'env secret 0b4f';

t.test('add an http server with a bearer token and a header, and a stdio server with env entries', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  const web = await httpFixture(t, tag, fixture('sdk-http-server.ts'), ['--bearer', BEARER]);
  const s = openScreen(t, { home });
  await s.waitFor('No servers configured yet. Press n to add one.');

  s.type('n');
  await s.waitFor('Add a server');
  t.equal(fieldText(s.lines(), 'transport'), '[http]  stdio   ← → switch', 'http is the default transport');
  s.press('tab');
  s.type(web.url);
  await s.waitFor(web.url);
  const suggested = `local-${new URL(web.url).port}`;
  t.equal(fieldText(s.lines(), 'name'), suggested, 'the name is suggested from the URL: this machine and its port, not the address');
  s.press('tab');
  s.press(...Array<'backspace'>(suggested.length).fill('backspace'));
  s.type('web');
  await s.waitFor(/name\s+web/);
  s.press('tab');
  s.type(BEARER);
  await s.waitFor('•'.repeat(BEARER.length));
  s.press('tab');
  s.type(`X-Tenant: ${HEADER_VALUE}`);
  await s.waitFor(`X-Tenant: ${'•'.repeat(HEADER_VALUE.length)}`);
  t.notOk(existsSync(path.join(home, 'extensions.json')), 'nothing is written before the save');
  s.press('ctrl+s');
  await s.waitFor(/added web: connected \(\d+ tools\)/);
  await s.waitFor(/^ › web /m);
  t.match(
    rowOf(s.lines(), 'web'),
    /^ › web\s+http\s+● discovered\s+\d+\s+○ fixed credentials\s+—$/,
    'the new server is in the list, selected',
  );

  const webServer = (await d.call('GET', srv('web'))).body;
  t.match(webServer, { config: { url: web.url }, secrets: { bearer: true, header: 'X-Tenant' } }, 'both secrets are stored');
  t.equal(webServer.state, 'discovered', 'the server took the stored bearer token (it refuses requests without it)');

  // The stdio server: ← → switch the transport; enter on the last field saves.
  s.type('n');
  await s.waitFor('Add a server');
  s.press('right');
  await s.waitFor(/transport\s+http\s+\[stdio\]/);
  t.equal(
    fieldText(s.lines(), 'command') !== null && fieldText(s.lines(), 'env') !== null,
    true,
    'a stdio server has command and env fields',
  );
  t.equal(fieldText(s.lines(), 'working dir'), path.resolve(ROOT), "and a working directory: the screen's own, shown");
  t.equal(fieldText(s.lines(), 'bearer token'), null, 'and no bearer token');
  s.press('tab');
  s.type(`node ${fixture('sdk-server.ts')}`);
  await s.waitFor(/name\s+sdk$/m);
  s.press('tab', 'tab', 'tab');
  await s.waitFor(/› env/);
  s.type(`ALBEDO_TEST_TAG=${tag}`);
  await s.waitFor(`ALBEDO_TEST_TAG=${tag}`);
  s.press('tab');
  s.type(`API_KEY="${ENV_SECRET}"`);
  await s.waitFor(`API_KEY=${'•'.repeat(ENV_SECRET.length + 2)}`);
  s.press('enter');
  await s.waitFor('trying the server…');
  await s.waitFor('added sdk: connected (5 tools)');
  t.match(rowOf(s.lines(), 'sdk'), /^ › sdk\s+stdio\s+● discovered\s+5\s+—\s+—$/, 'the stdio server is listed, selected');
  t.match(rowOf(s.lines(), 'web'), /^ {3}web\s+http/, 'the first one is still there');

  const sdk = (await d.call('GET', srv('sdk'))).body;
  t.same(sdk.secrets.env.sort(), ['ALBEDO_TEST_TAG', 'API_KEY'], 'the env entries are stored secrets');
  t.match(
    sdk.config,
    { command: 'node', args: [fixture('sdk-server.ts')], cwd: path.resolve(ROOT) },
    'the command line was split; the shown directory saved',
  );
  const ext = readFileSync(path.join(home, 'extensions.json'), 'utf8');
  const creds = readFileSync(path.join(home, 'creds.json'), 'utf8');
  for (const value of [BEARER, HEADER_VALUE, ENV_SECRET, tag]) {
    t.notOk(ext.includes(value), 'no typed value in extensions.json');
    t.ok(creds.includes(JSON.stringify(value).slice(1, -1)), 'the value is in creds.json');
  }
  for (const secret of [BEARER, HEADER_VALUE, ENV_SECRET]) t.notOk(s.everShown(secret), 'a secret was never on the screen');

  s.type('q');
  t.equal(await s.exited, 0, 'q quits, exit 0');
  t.equal(s.buffer(), 'normal', 'the terminal is back on its own screen');
});

t.test('the name follows the URL host or the command until it is edited', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  await startDaemon(t, home, { tag });
  const s = openScreen(t, { home });
  await s.waitFor('No servers configured yet');
  s.type('n');
  await s.waitFor('Add a server');
  s.press('tab');
  s.type('https://mcp.notion.com/mcp');
  await s.waitFor(/name\s+notion$/m);
  s.press('left');
  s.type('s');
  await s.waitFor('https://mcp.notion.com/mcsp');
  s.press('ctrl+a');
  s.type('%');
  await s.waitFor('%https://mcp.notion.com/mcsp');
  t.equal(fieldText(s.lines(), 'name'), 'a name for the server', 'not a URL: nothing to suggest (the empty field says what it wants)');
  s.press('left', 'delete');
  await s.waitFor(/name\s+notion$/m);
  t.equal(fieldText(s.lines(), 'url'), 'https://mcp.notion.com/mcsp');

  // The other transport suggests from its own field: the command's package.
  s.press('shift+tab');
  await s.waitFor(/› transport/);
  s.press('left');
  await s.waitFor(/transport\s+http\s+\[stdio\]/);
  s.press('down');
  s.type('npx -y @modelcontextprotocol/server-filesystem "/srv/my docs"');
  await s.waitFor(/name\s+filesystem$/m);

  // Edited, the name stays as the user wrote it.
  s.press('down', 'down');
  await s.waitFor(/› name/);
  s.press('backspace', 'backspace', 'backspace', 'backspace', 'backspace');
  s.type('docs');
  await s.waitFor(/name\s+filesdocs$/m);
  s.press('up', 'up');
  await s.waitFor(/› command/);
  s.press('end');
  s.type(' /srv/more');
  await s.waitFor('/srv/more');
  t.equal(fieldText(s.lines(), 'name'), 'filesdocs', 'an edited name is not replaced');

  // Emptied, it follows again.
  s.press('down', 'down');
  s.press(...Array<'backspace'>('filesdocs'.length).fill('backspace'));
  await s.waitFor(/name\s+a name for the server/);
  s.press('up', 'up');
  s.press('backspace');
  await s.waitFor(/name\s+filesystem$/m);

  // esc leaves the form without saving.
  s.press('esc');
  await s.waitFor('No servers configured yet');
  t.notOk(existsSync(path.join(home, 'extensions.json')), 'nothing was saved');
  s.press('ctrl+c');
  t.equal(await s.exited, 0, 'ctrl+c quits, exit 0');
  t.equal(s.buffer(), 'normal');
});
