// The /mcp screen's tools view (issue 26 item 7) and its list's columns
// (item 6): `t` lists the selected server's tools from its saved catalogue
// (server-everything's 13), with the selected tool's parameters; enter shows
// a whole tool and `i` the server's instructions (first line shown, the rest
// on demand, as text: markdown is not rendered); esc goes back. No session is
// opened. A server whose every word is hostile to a terminal is shown
// spelled out, never obeyed. The list's header is the shared one.
import t from 'tap';
import { fixture, newTag, NODE, EVERYTHING, tempHome } from '../helpers.ts';
import { entry, srv, startDaemon } from '../daemon/harness.ts';
import { openScreen, rowOf } from './screen-harness.ts';

t.setTimeout(170_000);

const HEADER = /^ {3}NAME\s+TYPE\s+STATE\s+TOOLS\s+SIGN-IN\s+PROBLEM$/m;

t.test('t lists the saved tools, enter and i show all, esc goes back; no session', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  for (const [name, body] of [
    ['everything', entry(NODE, [EVERYTHING, 'stdio'])],
    ['hostile', entry(NODE, [fixture('terminal-hostile-server.ts')])],
    ['later', { ...entry(NODE, [EVERYTHING, 'stdio']), enabled: false }],
  ] as const)
    t.equal((await d.call('PUT', srv(name), { body })).status, 201, `${name} added`);

  const s = openScreen(t, { home });
  await s.waitFor(/^ › everything /m);
  t.match(s.text(), HEADER, 'the shared columns');
  t.match(
    rowOf(s.lines(), 'everything'),
    /^ › everything\s+stdio\s+● discovered\s+13\s+—\s+—$/,
    'its tools counted, — for no sign-in and no problem',
  );
  t.match(rowOf(s.lines(), 'later'), /^ {3}later\s+stdio\s+○ disabled\s+—\s+—\s+—$/, 'no catalogue: —');
  // The description is server-everything's instructions: its first line only, the rest on demand.
  await s.waitFor('# Everything Server – Server Instructions  (t shows more)');
  t.notOk(s.text().includes('Audience:'), 'not the rest of it');

  s.type('t');
  await s.waitFor('Tools of everything');
  await s.waitFor(/^ › {3}echo\s+Echoes back the input string$/m);
  const view = s.text();
  t.match(view, /13 tools · 7 resources · 2 resource templates · 4 prompts/, 'what the catalogue holds');
  t.match(view, /instructions: # Everything Server – Server Instructions {2}\(i shows all\)/, "the instructions' first line");
  t.match(view, /message \(string, required\) — Message to echo/, "the selected tool's parameter");
  t.match(view, /1–\d+ of 13/, 'it scrolls');
  s.type('j');
  await s.waitFor(/^ › {3}get-annotated-message /m);
  await s.waitFor('messageType (one of "error", "success", "debug", required) — Type of message');
  s.press('end');
  await s.waitFor(/^ › {3}simulate-research-query /m);
  await s.waitFor(/\d+–13 of 13/);

  s.press('enter');
  await s.waitFor('everything · simulate-research-query');
  await s.waitFor('parameters (2):');
  s.press('esc');
  await s.waitFor(/^ › {3}simulate-research-query /m);

  s.type('i');
  await s.waitFor('Instructions of everything');
  await s.waitFor(/^ # Everything Server – Server Instructions$/m);
  t.match(s.text(), /^ Audience: These instructions/m, 'the rest of them');
  s.type('G');
  await s.waitFor('## Easter Egg');
  t.ok(
    s.frames().some((f) => f.includes('## Cross-Feature Relationships')),
    'markdown shown as text, its marks kept',
  );
  s.press('esc');
  await s.waitFor('Tools of everything');
  s.press('esc');
  await s.waitFor(HEADER);
  await s.waitFor(/^ › everything /m);

  // Every word of this server is hostile to a terminal: spelled out, never obeyed.
  s.type('j');
  await s.waitFor(/^ › hostile /m);
  s.type('t');
  await s.waitFor('Tools of hostile');
  await s.waitFor(/tool\\x1b\]0;T0\\x07/);
  await s.waitFor(/instructions: Read me\\x1b\]0;T0/);
  for (const raw of ['\x1b]0;T0', '\x1b]52;', '\u202e']) t.notOk(s.everShown(raw), `${JSON.stringify(raw)} never reached the terminal`);
  s.press('esc');
  await s.waitFor(/^ › hostile /m);

  s.type('j');
  await s.waitFor(/^ › later /m);
  s.type('t');
  await s.waitFor('No catalogue is saved for later');
  s.press('esc');
  await s.waitFor(/^ › later /m);

  t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], 'no session was opened');
  s.type('q');
  t.equal(await s.exited, 0);
});
