// A terminal too small for the /mcp screen (issue 12, review): it says so in
// one line instead of showing only the key hints, and q still quits.
import t from 'tap';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { openScreen } from './screen-harness.ts';

t.setTimeout(120_000);

t.test('at 30×8 the screen says it is too small; q quits', async (t) => {
  const home = tempHome(t);
  await startDaemon(t, home, { tag: newTag() });
  const s = openScreen(t, { home, cols: 30, rows: 8 });
  const shown = await s.waitFor('terminal too small');
  t.match(shown, /40×12/, 'it says what size it needs');
  t.notMatch(shown, /ctrl\+l/, 'not the key hints alone');
  s.type('q');
  t.equal(await s.exited, 0, 'q quits');
});
