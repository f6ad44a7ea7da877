// How the /mcp screen cuts a server's text into rows (bin/screen/ui.ts
// wrapLines) and sizes the list's columns (bin/screen/list.ts columnWidths)
// when the server or the terminal is hostile: a description of megabytes on
// one line, or a million line feeds, is cut as far as it is shown (it used to
// be re-copied once per row, which froze the screen on a 5 MB line); a
// terminal of 40 columns still gets one row per server.
import t from 'tap';
import { wrapLines } from '../../bin/screen/ui.ts';
import { columnWidths } from '../../bin/screen/list.ts';

const MB5 = 5 * 1024 * 1024;

t.test('rows at spaces, a long word cut, the cut marked, control characters spelled', async (t) => {
  t.same(wrapLines('one two three four five six', 10, 9), ['one two', 'three four', 'five six']);
  t.same(wrapLines('abcdefghijklmnopqrstuvwxyz', 10, 9), ['abcdefghij', 'klmnopqrst', 'uvwxyz']);
  t.same(wrapLines('abcdefghijklmnopqrstuvwxyz', 10, 2), ['abcdefghij', 'klmnopqrs…']);
  t.same(wrapLines('a\r\n\nb', 10, 9), ['a', '', 'b'], 'line ends kept, a blank line is a row');
  t.same(wrapLines('x\x1b]52;c;AA\x07y', 40, 9), ['x\\x1b]52;c;AA\\x07y'], 'an escape sequence spelled, never obeyed');
  t.same(wrapLines('😀'.repeat(25), 10, 2), ['😀'.repeat(10), `${'😀'.repeat(9)}…`], 'characters, not code units');
  // What is kept of a long line can end in spaces that the rows drop: the rest of the line still counts.
  t.same(wrapLines(`ab${' '.repeat(200)}cd`, 10, 2), ['ab', 'cd']);
  t.same(wrapLines(`ab${' '.repeat(200)}cd${' '.repeat(200)}ef`, 10, 2), ['ab', 'cd…']);
});

t.test("a server's text of megabytes: only what is shown is cut (the screen does not freeze)", async (t) => {
  t.same(wrapLines('H'.repeat(MB5), 98, 3), ['H'.repeat(98), 'H'.repeat(98), `${'H'.repeat(97)}…`], 'one line without a space');
  t.same(wrapLines('\n'.repeat(MB5), 98, 2), ['', '…'], 'a million line feeds');
  t.same(wrapLines(`${'\x1b'.repeat(MB5)}`, 20, 1), [`${'\\x1b'.repeat(4)}\\x1…`], 'control characters, spelled longer');
  const all = wrapLines('H'.repeat(MB5), 100, Number.MAX_SAFE_INTEGER);
  t.equal(all.length, Math.ceil(MB5 / 100), 'the pager gets every row of it');
  t.equal(all.join('').length, MB5);
});

t.test("the list's columns fit the terminal, down to the screen's 40 columns", async (t) => {
  // The row: selection mark 2, NAME, TYPE 5, STATE, TOOLS 5, SIGN-IN (each and a space), PROBLEM the rest.
  const row = (inner: number, name: number, sign: number): number => {
    const w = columnWidths(inner, name, sign);
    return 2 + (w.name + 1) + 6 + (w.state + 1) + 6 + (w.signIn + 1);
  };
  t.same(columnWidths(98, 10, 1), { name: 10, state: 23, signIn: 7 }, 'wide: every column whole');
  t.same(columnWidths(98, 40, 40), { name: 24, state: 23, signIn: 18 }, 'long names bounded; a long sign-in gives PROBLEM its room');
  for (const inner of [38, 48, 58, 68, 78]) {
    for (const [name, sign] of [
      [4, 1],
      [24, 30],
      [64, 64],
    ] as const) {
      t.ok(row(inner, name, sign) <= inner, `${inner + 2} columns, names of ${name}, sign-ins of ${sign}: the row fits`);
    }
  }
  t.ok(columnWidths(38, 24, 30).name >= 6 && columnWidths(38, 24, 30).state >= 12, 'at 40 columns a name and the state still show');
});
