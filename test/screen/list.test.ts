// The /mcp screen's list and the keys that act on the selected server (issue
// 12; docs/cli.md, "albedo mcp (the /mcp screen)"): ↑/↓ and j/k select; `d`
// deletes a server and its credentials after a y/n confirmation (anything but
// y keeps it); `e` switches a server on (tried first: one that cannot start
// stays off, with its error), `x` switches it off; a change made elsewhere
// shows on the next read; a server that cannot start as saved says why. At
// 80×24 every server stays on one row, long names and URLs cut, not wrapped.
import t from 'tap';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fixture, newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { openScreen, rowOf } from './screen-harness.ts';

t.setTimeout(170_000);

t.test('select, delete with a confirmation, switch on and off', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  for (const [name, body] of [
    ['alpha', sdkServer({ secrets: { env: { DEL_KEY: 'delete-me-4e' } } })],
    ['beta', sdkServer()],
    ['broken', { command: 'nodee', args: [fixture('sdk-server.ts')], enabled: false }],
  ] as const)
    t.equal((await d.call('PUT', srv(name), { body })).status, 201, `${name} added`);
  // A server whose file names a variable the daemon lacks (edited by hand): it cannot start as saved.
  const file = path.join(home, 'extensions.json');
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  doc.mcp.servers.needsvar = { command: 'node', args: [fixture('sdk-server.ts')], env: { KEY: { env: 'ALBEDO_SCREEN_UNSET_VAR' } } };
  writeFileSync(`${file}.tmp`, JSON.stringify(doc, null, 2));
  renameSync(`${file}.tmp`, file);

  const s = openScreen(t, { home });
  await s.waitFor(/^ › alpha /m);
  await s.waitFor(/^ {3}needsvar\s+stdio\s+✗ cannot start as saved/m);
  // PROBLEM: the reason a person reads (not the code alone, not the server's name again, which the row shows).
  const problem = /✗ cannot start as saved\s+—\s+—\s+(.+)$/.exec(rowOf(s.lines(), 'needsvar') ?? '')?.[1] ?? '';
  t.match(problem, /\bKEY\b/, `the field is named: ${problem}`);
  t.notMatch(problem, /^needsvar: |body\.|env\.KEY|^ALBEDO_[A-Z_]+$/, 'in the words albedo mcp list uses');
  s.type('j');
  await s.waitFor(/^ › beta /m);
  s.press('down');
  await s.waitFor(/^ › broken /m);
  s.type('k');
  await s.waitFor(/^ › beta /m);
  s.press('up');
  await s.waitFor(/^ › alpha /m);

  // d, then anything but y: kept.
  s.type('d');
  await s.waitFor('Delete alpha and its stored credentials? y/n');
  s.type('n');
  await s.waitFor('kept alpha');
  t.equal((await d.call('GET', srv('alpha'))).status, 200, 'not deleted');
  s.type('d');
  await s.waitFor('Delete alpha and its stored credentials? y/n');
  s.type('y');
  await s.waitFor('deleted alpha and its stored credentials');
  t.equal(rowOf(s.lines(), 'alpha'), null, 'gone from the list');
  t.equal((await d.call('GET', srv('alpha'))).status, 404, 'gone from the daemon');
  t.notOk(readFileSync(path.join(home, 'creds.json'), 'utf8').includes('delete-me-4e'), 'its stored secret is gone');
  t.match(s.text(), /^ › beta /m, 'the next server is selected');

  // Switched off elsewhere: the list shows it on its next read.
  t.equal((await d.call('POST', srv('beta', '/disable'))).status, 200);
  await s.waitFor(/^ › beta\s+stdio\s+○ disabled/m);
  await s.waitFor('○ switched off: press e to switch it on');
  s.type('e');
  await s.waitFor('switched on beta: connected (5 tools)');
  t.ok(
    s.frames().some((f) => f.includes('trying the server…')),
    'a spinner while the server was tried',
  );
  await s.waitFor(/^ › beta\s+stdio\s+● discovered\s+5\s/m);
  t.match((await d.call('GET', srv('beta'))).body, { enabled: true });
  s.type('e');
  await s.waitFor('beta is already on (x switches it off)');
  s.type('x');
  await s.waitFor('switched beta off (e switches it on)');
  await s.waitFor(/^ › beta\s+stdio\s+○ disabled/m);
  t.match((await d.call('GET', srv('beta'))).body, { enabled: false });
  s.type('x');
  await s.waitFor('beta is already off (e switches it on)');

  // One that cannot start stays off, and says why.
  s.type('j');
  await s.waitFor(/^ › broken /m);
  s.type('e');
  await s.waitFor('ALBEDO_SPAWN_FAILED');
  await s.waitFor(/cannot start\s+"nodee"/);
  t.match(rowOf(s.lines(), 'broken'), /○ disabled/, 'still off');
  t.match((await d.call('GET', srv('broken'))).body, { enabled: false });

  // What stops a server, for the one selected.
  s.type('j');
  await s.waitFor(/^ › needsvar /m);
  await s.waitFor(/✗ ALBEDO_\w+: .*ALBEDO_SCREEN_UNSET_VAR/);
  await s.waitFor('enter edits it · d deletes it');
  s.type('q');
  t.equal(await s.exited, 0);
});

t.test('at 80×24 every server keeps one row: long names and URLs are cut, not wrapped', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  const long = 'a-server-with-a-rather-long-name-that-goes-on-and-on';
  const url = `https://mcp.example.com/${'deep/'.repeat(30)}mcp`;
  for (const name of [long, 'two', 'three']) {
    t.equal((await d.call('PUT', srv(name), { body: { url, enabled: false } })).status, 201);
  }
  const s = openScreen(t, { home, cols: 80, rows: 24 });
  await s.waitFor(/^ {3}three\s+http/m);
  const lines = s.lines();
  const rows = lines.filter((l) => /^ [› ] \S+\s+http\s+○ disabled\s+—\s+○ no sign-in\s+—$/.test(l));
  t.equal(rows.length, 3, 'one row per server, every column on it');
  t.match(
    lines.find((l) => l.startsWith(' › ')),
    /^ › a-server-\S*…\s+http/,
    'the long name is cut with …',
  );
  t.ok(
    lines.some((l) => l.startsWith(` ${long}  https://mcp.exa`) && l.endsWith('…')),
    'the URL is cut on its one line',
  );
  t.ok(
    lines.some((l) => l.includes('q quit')),
    'the keys are on the screen',
  );
  t.equal(lines.length, 24);
  s.press('ctrl+c');
  t.equal(await s.exited, 0);
});
