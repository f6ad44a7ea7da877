// The /mcp screen's form refusing what cannot be saved, with the form kept
// open and both settings files unchanged byte for byte (issue 12;
// docs/design.md, "Saving a server": the previous settings and credentials
// stay as they were and the form stays open with the error): a mistyped command (the daemon's strict save cannot
// start it), a server that exits saying why (its stderr tail on the
// screen), a command line with an unbalanced quote (refused at the field,
// nothing sent), a name already taken (412).
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fixture, newTag, tempHome } from '../helpers.ts';
import { srv, startDaemon } from '../daemon/harness.ts';
import { openScreen, type Screen } from './screen-harness.ts';

t.setTimeout(170_000);

/** Both settings files as bytes, or null for one that does not exist. */
function files(home: string): Array<Buffer | null> {
  return ['extensions.json', 'creds.json'].map((f) => (existsSync(path.join(home, f)) ? readFileSync(path.join(home, f)) : null));
}

function same(
  t: { same(a: unknown, b: unknown, m: string): unknown },
  a: Array<Buffer | null>,
  b: Array<Buffer | null>,
  what: string,
): void {
  t.same(
    a.map((x) => x?.toString('base64') ?? null),
    b.map((x) => x?.toString('base64') ?? null),
    what,
  );
}

/** Opens the form for a new stdio server and types its command line. */
async function stdioForm(s: Screen, command: string): Promise<void> {
  s.type('n');
  await s.waitFor('Add a server');
  s.press('right', 'tab');
  await s.waitFor(/› command/);
  s.type(command);
}

t.test('a command that cannot start, or a shell would have to run, is refused with the form open and nothing written', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  const s = openScreen(t, { home });
  await s.waitFor('No servers configured yet');
  const empty = files(home);

  // A mistyped command: the strict save cannot start it.
  await stdioForm(s, `nodee ${fixture('sdk-server.ts')}`);
  s.press('ctrl+s');
  await s.waitFor('ALBEDO_SPAWN_FAILED');
  await s.waitFor(/cannot start\s+"nodee"/);
  t.match(s.text(), /Add a server/, 'the form is still open');
  same(t, files(home), empty, 'nothing written (neither file exists yet)');

  // Fixed where it was typed (home, → to the extra e, delete), the same form saves.
  t.match(s.text(), /› command/, 'the focus is still on the command');
  s.press('home', 'right', 'right', 'right', 'right', 'delete');
  await s.waitFor(/command\s+node \//);
  s.press('tab', 'tab', 'tab');
  await s.waitFor(/› env/);
  s.type(`ALBEDO_TEST_TAG=${tag}`);
  s.press('tab');
  await s.waitFor(/› secret env/);
  s.type('TOKEN=kept-secret-93');
  s.press('ctrl+s');
  await s.waitFor('added sdk: connected');
  const saved = files(home);
  t.ok(saved[0] && saved[1], 'both files now exist');

  // A server that exits: its stderr tail is the error.
  await stdioForm(s, `node -e "console.error('no API key: set BOOM_KEY'); process.exit(3)"`);
  s.press('tab', 'tab');
  await s.waitFor(/› name/);
  s.press(...Array<'backspace'>(60).fill('backspace'));
  s.type('boom');
  await s.waitFor(/name\s+boom$/m);
  s.press('ctrl+s');
  await s.waitFor('ALBEDO_SERVER_EXITED');
  await s.waitFor('no API key: set BOOM_KEY');
  same(t, files(home), saved, 'a server that exits changes nothing');

  // Unbalanced quote: refused at the field, nothing sent, the form still open.
  s.press('up', 'up');
  await s.waitFor(/› command/);
  s.press('ctrl+e');
  s.type(' "unclosed');
  s.press('ctrl+s');
  await s.waitFor('✗ unbalanced double quote: close it');
  t.match(s.text(), /ALBEDO_SERVER_EXITED/, 'the last refusal is still shown above');
  same(t, files(home), saved, 'a command line a shell would have to run is not sent');
  t.equal((await d.call('GET', srv('boom'))).status, 404);

  // A name already taken: 412, the form open.
  s.press('esc');
  await s.waitFor('MCP servers');
  s.type('n');
  await s.waitFor('Add a server');
  s.press('tab');
  s.type('http://127.0.0.1:9/mcp');
  s.press('tab');
  s.press(...Array<'backspace'>('127.0.0.1'.length).fill('backspace'));
  s.type('sdk');
  s.press('enter', 'enter', 'enter');
  await s.waitFor('ALBEDO_PRECONDITION_FAILED');
  await s.waitFor('a server named sdk exists');
  t.match(s.text(), /Add a server/, 'the form is still open');
  same(t, files(home), saved, 'a taken name changes nothing');
  t.match((await d.call('GET', srv('sdk'))).body, { config: { command: 'node' } }, 'the server of that name is as it was');

  // The first refusal again, with both files there: still byte for byte.
  s.press('esc');
  await s.waitFor('MCP servers');
  await stdioForm(s, `nodee ${fixture('sdk-server.ts')}`);
  s.press('tab', 'tab');
  await s.waitFor(/› name/);
  s.press(...Array<'backspace'>(10).fill('backspace'));
  s.type('sdk2');
  s.press('ctrl+s');
  await s.waitFor('ALBEDO_SPAWN_FAILED');
  same(t, files(home), saved, 'a refused save leaves both files as they were');
  t.notOk(s.everShown('kept-secret-93'), 'the secret was never on the screen');
  s.press('esc');
  await s.waitFor('MCP servers');
  s.type('q');
  t.equal(await s.exited, 0);
});
