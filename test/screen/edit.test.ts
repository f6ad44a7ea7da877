// The /mcp screen's form on an existing server (`enter`; issue 12;
// docs/design.md, "The server form": a blank secret keeps the stored one,
// `-` removes it): prefilled from
// the server, its stored secrets empty with a hint; blank keeps the bearer
// token (the server, which refuses requests without it, still connects), a
// new header value replaces the stored one, `-` removes the token and the
// header, `KEY=-` one env entry and a lone `-` all of them; the transport and
// the name are fixed; a server changed elsewhere meanwhile is a 412 in the
// form; nothing changed is said and nothing is sent.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { fieldText, openScreen } from './screen-harness.ts';

t.setTimeout(170_000);

const TOKEN = 'tok-edit-3c9e';

t.test('edit: blank keeps a stored secret, - removes it, KEY=- removes one env entry', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  const web = await httpFixture(t, tag, fixture('sdk-http-server.ts'), ['--bearer', TOKEN]);
  const secrets = { bearer: TOKEN, header: { name: 'X-Tenant', value: 'first-value' } };
  t.equal((await d.call('PUT', srv('web'), { body: { url: web.url, secrets } })).status, 201);
  t.equal(
    (await d.call('PUT', srv('sdk'), { body: sdkServer({ secrets: { env: { API_KEY: 'key-one-1a', OTHER: 'key-two-2b' } } }) })).status,
    201,
  );
  const creds = (): string => readFileSync(path.join(home, 'creds.json'), 'utf8');
  // Wide enough for the whole command line wherever the clone lives (a field shows a window of a longer text).
  const commandLine = `${sdkServer().command} ${fixture('sdk-server.ts')}`;
  const s = openScreen(t, { home, cols: Math.max(100, commandLine.length + 40) });
  await s.waitFor(/^ › web /m);

  s.press('enter');
  await s.waitFor('Edit web');
  t.equal(fieldText(s.lines(), 'transport'), 'http (fixed)', 'the transport is shown, fixed');
  t.equal(fieldText(s.lines(), 'name'), 'web (fixed)', 'so is the name');
  t.equal(fieldText(s.lines(), 'url'), web.url, 'the url is filled in');
  t.equal(fieldText(s.lines(), 'bearer token'), 'stored — blank keeps it, - removes it', 'a stored token: an empty field and a hint');
  t.equal(fieldText(s.lines(), 'header'), 'X-Tenant stored — blank keeps it, - removes it');

  // The token left blank, a new header value typed: saved, and the server still takes the stored token.
  s.press('tab', 'tab');
  await s.waitFor(/› header/);
  s.type('X-Tenant: second-value');
  s.press('ctrl+s');
  await s.waitFor('saved web: connected');
  t.match(
    (await d.call('GET', srv('web'))).body,
    { state: 'discovered', secrets: { bearer: true, header: 'X-Tenant' } },
    'the blank token kept the stored one',
  );
  t.ok(creds().includes(TOKEN), 'the token is still stored');
  t.ok(creds().includes('second-value') && !creds().includes('first-value'), 'the header value was replaced');

  // `-` removes: the server then answers 401, so it is saved needing a sign-in.
  s.press('enter');
  await s.waitFor('Edit web');
  s.press('tab');
  s.type('-');
  s.press('tab');
  s.type('-');
  s.press('enter');
  await s.waitFor('saved web: it needs a sign-in — press ctrl+l');
  t.match((await d.call('GET', srv('web'))).body, { secrets: { bearer: false, header: null } }, 'both secrets were removed');
  t.notOk(creds().includes(TOKEN), 'the token is gone from creds.json');

  // The stdio server: the command line filled in, the env names in the hint; KEY=- removes that entry.
  s.press('down');
  await s.waitFor(/^ › sdk /m);
  s.press('enter');
  await s.waitFor('Edit sdk');
  t.equal(fieldText(s.lines(), 'command'), commandLine, 'the command line is filled in');
  t.match(fieldText(s.lines(), 'env'), /^blank keeps · KEY=- removes one · - removes all · set: API_KEY, OTHER, ALBEDO_TES/);
  t.ok(
    s.lines().findIndex((l) => /^\s*.? command /.test(l)) < s.lines().findIndex((l) => /^\s*.? working dir /.test(l)) &&
      s.lines().findIndex((l) => /^\s*.? working dir /.test(l)) < s.lines().findIndex((l) => /^\s*.? name /.test(l)),
    "the rows in the order of a new server's: command, working dir, name",
  );
  s.press('tab', 'tab');
  await s.waitFor(/› env/);
  s.type('API_KEY=-');
  s.press('ctrl+s');
  await s.waitFor('saved sdk: connected');
  const sdk = (await d.call('GET', srv('sdk'))).body;
  t.same(sdk.secrets.env, ['OTHER'], 'API_KEY was removed, OTHER kept');
  t.match(sdk.config.env, { ALBEDO_TEST_TAG: { env: 'TEST_SERVER_TAG' } }, 'the named variable was kept');

  // Nothing typed: nothing is sent.
  const before = readFileSync(path.join(home, 'extensions.json'));
  s.press('enter');
  await s.waitFor('Edit sdk');
  s.press('ctrl+s');
  await s.waitFor('sdk: nothing changed');
  t.ok(readFileSync(path.join(home, 'extensions.json')).equals(before), 'nothing written');

  // Changed elsewhere while the form is open: the save is refused (412), the form stays open.
  s.press('enter');
  await s.waitFor('Edit sdk');
  t.equal((await d.call('PATCH', srv('sdk'), { body: { callTimeoutMs: 45_000 } })).status, 200);
  s.press('tab', 'tab', 'tab');
  await s.waitFor(/› secret env/);
  s.type('OTHER=replaced-3d');
  s.press('ctrl+s');
  await s.waitFor('ALBEDO_PRECONDITION_FAILED');
  await s.waitFor('sdk was changed elsewhere since this form opened');
  t.notOk(creds().includes('replaced-3d'), 'nothing was stored');

  // Reopened, a lone `-` removes every env entry, stored and named (the variable named with TEST_SERVER_TAG too).
  s.press('esc');
  await s.waitFor('MCP servers');
  s.press('enter');
  await s.waitFor('Edit sdk');
  s.press('tab', 'tab');
  await s.waitFor(/› env/);
  s.type('-');
  s.press('ctrl+s');
  await s.waitFor('saved sdk: connected');
  const bare = (await d.call('GET', srv('sdk'))).body;
  t.same([bare.secrets.env, bare.config.env], [[], {}], 'no env entry left');
  for (const secret of [TOKEN, 'first-value', 'second-value', 'key-one-1a', 'key-two-2b', 'replaced-3d']) {
    t.notOk(s.everShown(secret), 'no secret was ever on the screen');
  }
  s.type('q');
  t.equal(await s.exited, 0);
});
