// The /mcp screen's extensions view (issue 23): `X` shows both extensions with
// their defaults for every session; a switch writes `enabled` in
// extensions.json through PATCH /v1/mcp (`r`: the key taken out, the built-in
// default on again). After `s` and a session picked — here a real ACP session
// opened with the daemon's POST /v1/acp/sessions, a real MCP server as the
// editor's — a switch changes that session only (PATCH /v1/sessions/{id}):
// the defaults, the file and the other session stay as they were.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { openScreen } from './screen-harness.ts';

t.setTimeout(170_000);

const enabledInFile = (home: string): unknown => JSON.parse(readFileSync(path.join(home, 'extensions.json'), 'utf8')).enabled;

t.test('X: the defaults for every session, then one session only', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201);
  const plain = await d.call('POST', '/v1/sessions', { body: {} });
  t.equal(plain.status, 201, 'a plain session');
  const editor = { name: 'ed', command: NODE, args: [fixture('sdk-server.ts')], env: [{ name: 'ALBEDO_TEST_TAG', value: tag }] };
  const agent = { command: '/usr/bin/env', args: ['agent'] };
  const acp = await d.call('POST', '/v1/acp/sessions', { body: { cwd: tempDir(t, 'ext-cwd-'), mcpServers: [editor], agent } });
  t.equal(acp.status, 201, 'an ACP session');
  const id: string = acp.body.id;
  const ext = async (sid: string) => (await d.call('GET', `/v1/sessions/${sid}`)).body.extensions;
  const defaults = async () => (await d.call('GET', '/v1/mcp')).body.enabled;

  const s = openScreen(t, { home, cols: 120 });
  await s.waitFor(/^ › sdk /m);
  t.match(s.text(), /X extensions/, 'the list names the key');
  s.type('X');
  await s.waitFor('Extensions  for every session');
  await s.waitFor(/^ {3}EXTENSION\s+DEFAULT\s+BRINGS$/m);
  t.match(s.text(), /^ › mcp\s+● on\s+the configured MCP servers' tools$/m);
  t.match(s.text(), /^ {3}editor-mcp\s+● on\s+an editor's own servers \(albedo acp\)$/m);

  // Switched off for every session: written to extensions.json.
  s.type('j ');
  await s.waitFor(/^ › editor-mcp\s+○ off/m);
  await s.waitFor('editor-mcp: switched off for every session');
  t.same(await defaults(), { mcp: true, 'editor-mcp': false }, 'the daemon says off');
  t.same(enabledInFile(home), { 'editor-mcp': false }, 'extensions.json says so');
  // r: the built-in default again, the key out of the file.
  s.type('r');
  await s.waitFor('editor-mcp: back to the built-in default (on) for every session');
  await s.waitFor(/^ › editor-mcp\s+● on/m);
  t.same(await defaults(), { mcp: true, 'editor-mcp': true });
  t.notOk(enabledInFile(home) && Object.hasOwn(enabledInFile(home) as object, 'editor-mcp'), 'the key is gone from the file');

  // s: pick the ACP session.
  s.type('s');
  await s.waitFor('Extensions  pick a session');
  await s.waitFor(/^ {3}SESSION\s+KIND\s+PROFILE\s+TOOLS$/m);
  t.match(s.text(), new RegExp(`^ [› ] ${id}\\s+acp\\s+portable`, 'm'), 'the ACP session, marked');
  t.match(s.text(), new RegExp(`^ [› ] ${plain.body.id}\\s+—\\s+portable`, 'm'), 'the plain one');
  const order = (await d.call('GET', '/v1/sessions')).body.sessions.map((x: { id: string }) => x.id) as string[];
  s.type('j'.repeat(order.indexOf(id)));
  await s.waitFor(new RegExp(`^ › ${id}`, 'm'));
  s.press('enter');
  await s.waitFor(`Extensions  session ${id.slice(0, 8)} (acp) only`);
  await s.waitFor(/^ {3}EXTENSION\s+CHOSEN\s+IN FORCE\s+BRINGS$/m);
  t.match(s.text(), /^ {3}mcp\s+default\s+● on\s+/m, 'no choice of its own: the default');
  // The session follows the default back on (its reload comes a moment after the write): read again while open.
  await s.waitFor(/^ › editor-mcp\s+default\s+● on\s+/m);

  s.type(' ');
  await s.waitFor(`editor-mcp: switched off for session ${id.slice(0, 8)} (acp)`);
  await s.waitFor(/^ › editor-mcp\s+○ off\s+○ off/m);
  t.match(await ext(id), { 'editor-mcp': { chosen: false, effective: false }, mcp: { chosen: null, effective: true } }, 'that session');
  t.match(await ext(plain.body.id), { 'editor-mcp': { chosen: null, effective: true } }, 'not the other');
  t.same(await defaults(), { mcp: true, 'editor-mcp': true }, 'not the defaults');
  const info = (await d.call('GET', `/v1/acp/sessions/${id}`)).body;
  t.equal(info.editorMcp, false, 'the ACP session says editor-mcp is off');

  s.type('r');
  await s.waitFor(`editor-mcp: the default decides again for session ${id.slice(0, 8)} (acp)`);
  await s.waitFor(/^ › editor-mcp\s+default\s+● on/m);
  t.match(await ext(id), { 'editor-mcp': { chosen: null, effective: true } });

  s.press('esc');
  await s.waitFor('Extensions  for every session');
  s.press('esc');
  await s.waitFor(/^ {3}NAME\s+TYPE\s+STATE\s+TOOLS\s+SIGN-IN\s+PROBLEM$/m);
  s.type('q');
  t.equal(await s.exited, 0);
});
