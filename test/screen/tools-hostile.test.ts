// The /mcp screen's tools view against hostile catalogues and small or
// changing terminals (issue 26 item 7, review): a 5 MB description and 5 MB
// of instructions on one line (which froze the screen), 10,000 tools, tools
// named after Object.prototype's keys or twice, no tool at all; a terminal
// of the screen's smallest height, where a note or the server's description
// pushed the title off the top; the list at 40 and 50 columns, where every
// server's row wrapped and tore the table; and a resize while the view is
// open, through a size too small (which used to close the view's page and
// lose its selection). The servers are test/fixtures/catalogue-hostile-server.ts, saved by a
// real strict save.
import t from 'tap';
import { NODE, fixture, newTag, tempHome, until } from '../helpers.ts';
import { entry, srv, startDaemon } from '../daemon/harness.ts';
import { openScreen, rowOf, type Screen } from './screen-harness.ts';

t.setTimeout(240_000);

/** Every row of the list's table: the selection mark, a name, then the transport. */
const tableRows = (s: Screen): string[] => s.lines().filter((l) => /^ [› ] \S+\s+stdio /.test(l));

t.test('hostile catalogues, small terminals, a resize', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  for (const mode of ['huge', 'many', 'proto', 'bare', 'none']) {
    const r = await d.call('PUT', srv(mode), { body: entry(NODE, [fixture('catalogue-hostile-server.ts'), mode]) });
    t.equal(r.status, 201, `${mode} added: ${r.text.slice(0, 200)}`);
  }

  t.test('5 MB on one line: listed at once, cut; enter and i page through all of it', async (t) => {
    const s = openScreen(t, { home });
    await s.waitFor(/^ › huge /m);
    s.type('t');
    // It used to freeze here: every row of the description was copied out of the whole 5 MB again.
    await s.waitFor(/^ {5}after\s+The tool after the huge one$/m);
    await s.waitFor(/^ › {3}huge\s+H+…$/m);
    t.match(s.text(), /^ instructions: I+…/m, "the instructions' first line, cut");
    s.press('enter');
    await s.waitFor('huge · huge');
    await s.waitFor(/lines 1–\d+ of 5\d{4}/);
    s.type('G');
    await s.waitFor(/^ input schema:$/m);
    s.press('esc');
    await s.waitFor(/^ › {3}huge /m);
    s.type('i');
    await s.waitFor('Instructions of huge');
    await s.waitFor(/lines 1–\d+ of 5\d{4}/);
    s.press('esc');
    await s.waitFor('Tools of huge');
    s.type('q');
    t.equal(await s.exited, 0);
  });

  t.test('10,000 tools, prototype names, two of one name, none at all', async (t) => {
    const s = openScreen(t, { home });
    await s.waitFor(/^ › huge /m);
    s.type('j');
    await s.waitFor(/^ › many /m);
    s.type('t');
    await s.waitFor(/^ › {3}t0\s+Tool number 0$/m);
    s.press('end');
    await s.waitFor(/^ › {3}t9999\s+Tool number 9999$/m);
    await s.waitFor(/–10000 of 10000/);
    s.press('esc');
    await s.waitFor(/^ › many /m);
    s.type('j');
    await s.waitFor(/^ › proto /m);
    s.type('t');
    await s.waitFor('hasOwnProperty');
    const view = s.text();
    for (const name of ['__proto__', 'constructor', 'toString']) t.match(view, new RegExp(`^ [› ] {3}${name} `, 'm'), `${name} listed`);
    t.match(view, /toString\s+one\n.*toString\s+two of one name/, 'both tools of one name');
    t.match(view, /hasOwnProperty\s+x\\u202egnp\.exe/, 'a bidi control spelled');
    t.notOk(s.everShown('\u202e'), 'and never sent to the terminal');
    s.press('esc');
    await s.waitFor(/^ › proto /m);
    s.type('jj');
    await s.waitFor(/^ › none /m);
    s.type('t');
    await s.waitFor('none offers no tools');
    s.type('jkGg');
    s.press('enter', 'up', 'down', 'end', 'home');
    s.type('i');
    await s.waitFor('Instructions of none');
    s.press('esc');
    await s.waitFor('none offers no tools');
    s.type('q');
    t.equal(await s.exited, 0);
  });

  t.test("the smallest terminal: the title stays on screen, a note takes the keys' row", async (t) => {
    const s = openScreen(t, { home, cols: 100, rows: 12 });
    await s.waitFor(/^ › huge /m);
    s.type('jjj');
    await s.waitFor(/^ › bare /m);
    s.type('t');
    await s.waitFor('… 12 more: enter shows all');
    t.match(s.lines()[0], /^ Tools of bare /, 'the title on the first row');
    s.type('i');
    await s.waitFor('bare gave no instructions');
    t.match(s.lines()[0], /^ Tools of bare /, 'still there with the note');
    t.notOk(s.text().includes('esc back'), "the note took the keys' row");
    s.type('j');
    await s.waitFor('esc back');
    s.resize(100, 13);
    await s.waitFor('about: A bare server');
    t.match(s.lines()[0], /^ Tools of bare /, "one row more: the server's description too");
    s.press('esc');
    await s.waitFor(/^ › bare /m);
    s.resize(100, 12);
    s.type('k');
    await s.waitFor(/^ › proto /m);
    s.type('k');
    await s.waitFor(/^ › many /m);
    s.type('t');
    await s.waitFor(/of 10000$/m);
    t.match(s.lines()[0], /^ Tools of many /, 'a long list: the title on the first row');
    t.match(s.text(), /esc back/, 'and the keys on screen');
    s.type('q');
    t.equal(await s.exited, 0);
  });

  t.test('40 and 50 columns: one row per server', async (t) => {
    const s = openScreen(t, { home, cols: 40, rows: 24 });
    await s.waitFor(/^ › huge /m);
    // Waited for, not read at once: a frame reaches the terminal in pieces.
    await until(() => tableRows(s).length === 5, 30_000, 'five rows at 40 columns');
    t.equal(tableRows(s).length, 5, 'five servers, five rows');
    t.match(rowOf(s.lines(), 'many'), /^ {3}many\s+stdio ● discovered\s+10000/, 'name, type, state and tools on one row');
    t.match(s.text(), /^ {3}NAME\s+TYPE\s+STATE\s+TOOLS/m, 'the header over its columns');
    s.resize(50, 24);
    await s.waitFor(/^ {3}NAME\s+TYPE\s+STATE {16,}TOOLS\s+SI/m);
    await until(() => tableRows(s).length === 5, 30_000, 'five rows at 50 columns');
    t.equal(tableRows(s).length, 5, 'at 50 columns too');
    // Open the tools view, resize while it is open: it follows the terminal.
    s.type('j');
    await s.waitFor(/^ › many /m);
    s.type('t');
    await s.waitFor(/^ › {3}t0 /m);
    s.resize(100, 30);
    await s.waitFor(/1–\d+ of 10000/);
    t.match(s.lines()[0], /^ Tools of many  10000 tools/, 'wider: the summary shows');
    // Too small for a moment, twice: the selection comes back, and so does a tool's page left open.
    s.type('jjjjj');
    await s.waitFor(/^ › {3}t5 /m);
    s.resize(30, 8);
    await s.waitFor('terminal too small');
    s.resize(100, 30);
    await s.waitFor('Tools of many');
    t.match(s.text(), /^ › {3}t5 /m, 'the tool selected before');
    s.press('enter');
    await s.waitFor('many · t5');
    s.resize(30, 8);
    await s.waitFor('terminal too small');
    s.resize(100, 30);
    await s.waitFor('many · t5');
    t.match(s.text(), /^ input schema:$/m, 'the page left open');
    s.press('esc');
    await s.waitFor(/^ › {3}t5 /m);
    s.type('q');
    t.equal(await s.exited, 0);
  });
});
