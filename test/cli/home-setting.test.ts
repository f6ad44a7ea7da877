// $ALBEDO_HOME as the CLI and the daemon read it (one rule, two copies: the
// CLI must not load the kernel to start): unset or empty, ~/.albedo; a
// leading ~ or ~/ is the user's home (a quoted ~ reaches us unexpanded);
// a relative path is taken from the current directory; ~name is refused
// (exit 2, ALBEDO_INVALID_ARGUMENT), since nothing here can expand it.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultHome } from '../../api/albedo.ts';
import { albedoHome } from '../../bin/client/daemon.ts';
import { newTag } from '../helpers.ts';
import { piped } from './cli-harness.ts';

t.setTimeout(120_000);

t.test('the CLI and the embedding API read ALBEDO_HOME alike', async (t) => {
  const home = os.homedir();
  const cases: Array<[string | undefined, string | null]> = [
    [undefined, path.join(home, '.albedo')],
    ['', path.join(home, '.albedo')],
    ['~', home],
    ['~/state/albedo', path.join(home, 'state', 'albedo')],
    ['/srv/albedo', '/srv/albedo'],
    ['rel/albedo', path.resolve('rel/albedo')],
    ['/srv/../srv/a', '/srv/a'],
    ['~bob/x', null],
    ['~bob', null],
  ];
  for (const [value, want] of cases) {
    const env = value === undefined ? {} : { ALBEDO_HOME: value };
    if (want === null) {
      t.throws(() => albedoHome(env), { code: 'ALBEDO_INVALID_ARGUMENT', exit: 2 }, `${value}: the CLI refuses it`);
      t.throws(() => defaultHome(env), { code: 'ALBEDO_INVALID_ARGUMENT' }, `${value}: so does the API`);
    } else {
      t.equal(albedoHome(env), want, `${value}: the CLI`);
      t.equal(defaultHome(env), want, `${value}: the API`);
    }
  }
});

t.test('through the real CLI: ~ expanded, a relative home made absolute, ~name refused by every command', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-home-setting-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const run = (value: string, args: string[]) => piped({ home: value, tag: newTag(), cwd: dir, env: { HOME: dir } }, args);

  const tilde = await run('~/h', ['daemon', 'status', '--json']);
  t.equal(tilde.code, 3, `no daemon runs there: ${tilde.stderr}`);
  t.equal(JSON.parse(tilde.stdout).home, path.join(dir, 'h'), "the user's home, not a directory named ~");
  const relative = await run('rel', ['daemon', 'status', '--json']);
  t.equal(JSON.parse(relative.stdout).home, path.join(dir, 'rel'), 'taken from the current directory');

  for (const args of [['daemon', 'status'], ['mcp', 'list'], ['daemon'], ['probe', '--', 'true']]) {
    const r = await run('~bob/albedo', args);
    t.equal(r.code, 2, `${args.join(' ')}: bad usage`);
    t.match(r.stderr, /^albedo( probe)?: ALBEDO_INVALID_ARGUMENT: /m, args.join(' '));
    t.match(r.stderr, /only ~ and ~\/ are expanded/);
  }
});
