// Ink and React are the screen's alone (issue 12): `albedo mcp list` loads
// neither, nor any file of bin/screen/, so the other commands keep their
// start-up; and the screen, like every command that talks to the daemon,
// loads nothing of the kernel's side (api/, services/, kernel/, daemon/, and
// of protocol/ only the command-line splitter). Checked on the modules real
// runs load (test/fixtures/load-log.ts), as test/architecture/cli-imports.test.ts
// checks the imports.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CLI_PROTOCOL, NODE, ROOT, fixture, newTag, tempHome } from '../helpers.ts';
import { BIN, sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { openScreen } from './screen-harness.ts';

t.setTimeout(170_000);

/** The files of the repository a run loaded, relative to it (node_modules included). */
function loaded(log: string): string[] {
  return readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .filter((u) => u.startsWith(`file://${ROOT}`))
    .map((u) => decodeURIComponent(u.slice(`file://${ROOT}`.length)));
}

const KERNEL_SIDE = /^(api|services|kernel|daemon)\//;

t.test('albedo mcp list loads no Ink, no React, no screen; the screen loads them and nothing of the kernel', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201);

  const listLog = path.join(home, 'list.txt');
  const r = spawnSync(NODE, ['--import', fixture('load-log.ts'), BIN, 'mcp', 'list', '--json'], {
    env: { ...process.env, ALBEDO_HOME: home, ALBEDO_LOAD_LOG: listLog },
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.equal(r.status, 0, r.stderr);
  const list = loaded(listLog);
  t.ok(list.includes('bin/commands/mcp.ts'), 'the log sees the command');
  t.same(
    list.filter((f) => /^(node_modules\/(ink|react|yoga-layout)\/|bin\/screen\/)/.test(f)),
    [],
    'no Ink, React or screen module',
  );

  const screenLog = path.join(home, 'screen.txt');
  const s = openScreen(t, { home, nodeArgs: ['--import', fixture('load-log.ts')], env: { ALBEDO_LOAD_LOG: screenLog } });
  await s.waitFor(/^ › sdk /m);
  s.type('n');
  await s.waitFor('Add a server');
  s.press('esc');
  await s.waitFor('MCP servers');
  s.type('q');
  t.equal(await s.exited, 0);
  const screen = loaded(screenLog);
  t.ok(screen.includes('bin/screen/app.ts') && screen.some((f) => f.startsWith('node_modules/ink/')), 'the screen loads Ink');
  t.same(
    screen.filter((f) => KERNEL_SIDE.test(f) || (f.startsWith('protocol/') && !CLI_PROTOCOL.has(f))),
    [],
    "nothing of the kernel's side",
  );
});
