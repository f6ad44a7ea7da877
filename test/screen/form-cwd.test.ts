// The /mcp form's working directory and name (issue 26, everyday use): a new
// stdio server runs in the directory shown in the form — the screen's own
// until the user types another — so the reference filesystem server given
// "." serves that directory; a `~` is flagged as soon as the field is left
// (no shell expands it) and the flag goes when the field changes; the
// suggested name is never one a server has.
import t from 'tap';
import path from 'node:path';
import { NODE, ROOT, newTag, tempDir, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { piped } from '../cli/cli-harness.ts';
import { fieldText, openScreen } from './screen-harness.ts';

t.setTimeout(170_000);

const FS = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

t.test('a new stdio server runs in the directory the form shows; ~ is flagged; a taken name is not suggested', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('filesystem'), { body: sdkServer() })).status, 201, 'a server named filesystem exists');
  const here = tempDir(t, 'albedo-screen-here-');
  const there = tempDir(t, 'albedo-screen-there-');
  const command = `${NODE} ${FS} .`;
  const s = openScreen(t, { home, cwd: here, cols: Math.max(120, command.length + 30) });
  await s.waitFor(/^ › filesystem /m);

  s.type('n');
  await s.waitFor('Add a server');
  s.press('right', 'tab');
  await s.waitFor(/› command/);
  t.equal(fieldText(s.lines(), 'working dir'), here, "the screen's directory is shown");
  s.type(command);
  await s.waitFor(/name\s+filesystem-2$/m);
  t.pass('the name suggested is not the one taken');

  // ~ in the working directory: said when the field is left, gone when it changes.
  s.press('tab');
  await s.waitFor(/› working dir/);
  s.press(...Array<'backspace'>(here.length).fill('backspace'));
  s.type('~/docs');
  await s.waitFor(/working dir\s+~\/docs/);
  t.notMatch(s.text(), /✗/, 'nothing said while typing');
  s.press('tab');
  await s.waitFor(/› name/);
  await s.waitFor('✗ no shell runs, so ~ is not your home directory');
  s.press('up');
  await s.waitFor(/› working dir/);
  s.press(...Array<'backspace'>('~/docs'.length).fill('backspace'));
  await s.waitGone('✗ no shell runs');
  s.type(there);
  await s.waitFor(`working dir  ${there}`);
  s.press('tab', 'tab');
  await s.waitFor(/› env/);
  s.type(`ALBEDO_TEST_TAG=${tag}`);
  s.press('ctrl+s');
  await s.waitFor(/added filesystem-2: connected/);

  const saved = (await d.call('GET', srv('filesystem-2'))).body;
  t.equal(saved.config.cwd, there, 'the directory shown is the one saved');
  const allowed = await piped({ home, tag }, ['call', 'filesystem-2/list_allowed_directories', '--json']);
  t.equal(allowed.code, 0, allowed.stderr);
  const text: string = JSON.parse(allowed.stdout)
    .content.map((c: { text?: string }) => c.text ?? '')
    .join('\n');
  t.same(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => path.isAbsolute(l)),
    [there],
    '"." is that directory',
  );
  s.type('q');
  t.equal(await s.exited, 0);
});
