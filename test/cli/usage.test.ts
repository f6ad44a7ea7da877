// Bad usage is exit 2 and one line, everywhere: a command group without its
// subcommand (`albedo mcp`, as bare `albedo`), extra words after `daemon
// status`, a bad `--port`, `--` taken for a server name. `albedo --version`
// prints the package's version and loads none of the commands (issue 11,
// hardening: polish).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, ROOT, fixture, newTag, tempHome } from '../helpers.ts';
import { BIN } from '../daemon/harness.ts';
import { errorCode, piped, stopDaemonAtTeardown } from './cli-harness.ts';

t.setTimeout(170_000);

t.test('usage errors: exit 2, one line on stderr, nothing on stdout, no daemon asked', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  for (const args of [['mcp'], [], ['daemon', 'status', 'extra'], ['daemon', 'stop', 'now'], ['daemon', 'status', '--bogus']]) {
    const r = await piped(e, args);
    t.equal(r.code, 2, `albedo ${args.join(' ')}: exit 2`);
    t.equal(r.stdout, '', 'nothing on stdout');
  }
  for (const args of [
    ['daemon', '--port', '99999'],
    ['daemon', '--port', 'x'],
    ['mcp', 'add', '--', '--', '/bin/true'],
    ['mcp', 'add', '--', '-x', '--', '/bin/true'],
    ['mcp', 'edit', '--', '--', '/bin/true'],
    ['daemon', 'status', 'extra'],
  ]) {
    const r = await piped(e, args);
    t.equal(r.code, 2, `albedo ${args.join(' ')}: exit 2`);
    t.equal(errorCode(r.stderr), 'ALBEDO_INVALID_ARGUMENT');
    t.equal(r.stderr.trim().split('\n').length, 1, `albedo ${args.join(' ')}: one line`);
  }
  t.notOk(existsSync(path.join(e.home, 'daemon.json')), 'no daemon was started');
  for (const args of [
    ['daemon', 'status', '--help'],
    ['help', 'mcp'],
    ['mcp', '--help'],
  ]) {
    const r = await piped(e, args);
    t.equal(r.code, 0, `albedo ${args.join(' ')}: help asked for is exit 0`);
    t.match(r.stdout, /Usage: albedo/);
  }
});

t.test('albedo --version: the package version, loading no command', async (t) => {
  const home = tempHome(t);
  const version = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
  for (const flag of ['--version', '-V']) {
    const log = path.join(home, `loaded${flag}.txt`);
    const r = spawnSync(NODE, ['--import', fixture('load-log.ts'), BIN, flag], {
      env: { ...process.env, ALBEDO_HOME: home, ALBEDO_LOAD_LOG: log },
      encoding: 'utf8',
      timeout: 60_000,
    });
    t.equal(r.status, 0, r.stderr);
    t.equal(r.stdout, `${version}\n`);
    const ours = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .filter((u) => u.startsWith(`file://${ROOT}`) && !u.includes('/node_modules/'))
      .map((u) => decodeURIComponent(u.slice(`file://${ROOT}`.length)))
      .filter((f) => f !== 'test/fixtures/load-log.ts');
    // web/shared/shown.js: the one set of characters shown escaped, which output.ts shares with the pane.
    // bin/albedo.js: the entry that checks Node (bin/albedo.ts links to it); bin/main.ts: the program.
    t.same(
      ours.sort(),
      ['bin/albedo.js', 'bin/client/errors.ts', 'bin/client/output.ts', 'bin/main.ts', 'web/shared/shown.js'],
      `${flag}: only the program itself`,
    );
  }
});
