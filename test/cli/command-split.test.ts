// `--command` is split by shell quoting rules and no shell runs, so what only
// a shell would do is refused — exit 2, one line, ALBEDO_INVALID_ARGUMENT —
// rather than passed on literally: unbalanced quotes, a trailing backslash,
// command substitution, a leading ~, glob and brace characters, a first word
// NAME=value (docs/cli.md lists them). Quoted or escaped, each is a plain
// character (issue 11, hardening). Refused before any daemon is asked.
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { splitCommand } from '../../bin/commands/entry.ts';
import { CliError } from '../../bin/client/errors.ts';
import { errorCode, piped, stopDaemonAtTeardown } from './cli-harness.ts';

t.setTimeout(170_000);

/** Each refused line, and a pattern its message must match (the hint it gives). */
const REFUSED: Array<[string, RegExp]> = [
  ["srv 'unbalanced", /unbalanced single quote/],
  ['srv "unbalanced', /unbalanced double quote/],
  ['srv "a\'b', /unbalanced double quote/],
  ['srv arg\\', /trailing backslash/],
  ['srv `id`', /backtick/],
  ['srv "`id`"', /backtick/],
  ['srv "a\\`b"', /backtick/],
  ['srv $(whoami)', /\$\(/],
  ['srv "$(whoami)"', /\$\(/],
  ['srv ~/data', /~/],
  ['~/bin/srv', /~/],
  ['srv *.ts', /quote it/],
  ['srv file?.txt', /quote it/],
  ['srv [ab]', /quote it/],
  ['srv {a,b}', /quote it/],
  ['srv --x={1..3}', /quote it/],
  ['FOO=bar srv', /--env FOO=/],
  ['  API_KEY=sk-1 B=2 srv', /--env API_KEY=/],
  ['srv ${HOME}', /--env/],
  ['srv $HOME', /--env/],
  ['srv | tee log', /operator/],
  ['srv > out', /operator/],
  ['srv # comment', /comment/],
];

/** Lines a shell reads as plain words, and the words. */
const ACCEPTED: Array<[string, string[]]> = [
  ["srv '*.ts' \"?\" '[ab]' '{a,b}'", ['srv', '*.ts', '?', '[ab]', '{a,b}']],
  ['srv \\*.ts a\\?b \\[x\\] \\{y\\}', ['srv', '*.ts', 'a?b', '[x]', '{y}']],
  ['srv \'~/data\' "~" \\~ a~b --home=~', ['srv', '~/data', '~', '~', 'a~b', '--home=~']],
  ["srv '`id`' '$(x)' \"\\$(x)\" \\`", ['srv', '`id`', '$(x)', '$(x)', '`']],
  ["'FOO=bar' srv X=1", ['FOO=bar', 'srv', 'X=1']],
  ["srv 'it''s' \"say \\\"hi\\\"\" plain\\ word '/srv/my docs'", ['srv', 'its', 'say "hi"', 'plain word', '/srv/my docs']],
  ['srv "a\\\\"', ['srv', 'a\\']],
  ['node -e "process.exit(1)"', ['node', '-e', 'process.exit(1)']],
];

t.test('splitCommand refuses what only a shell would do, each with its hint', async (t) => {
  for (const [line, hint] of REFUSED) {
    let err: unknown;
    try {
      splitCommand(line);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof CliError, `${line}: refused`);
    t.match(err, { code: 'ALBEDO_INVALID_ARGUMENT', exit: 2 }, `${line}: bad usage`);
    t.match((err as Error).message, hint, `${line}: the hint`);
  }
});

t.test('quoted or escaped, the same characters are plain words', async (t) => {
  for (const [line, words] of ACCEPTED) t.same(splitCommand(line), words, line);
});

t.test('albedo mcp add --command: each refusal is exit 2 and one line, and asks no daemon', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  for (const [line] of REFUSED) {
    const r = await piped(e, ['mcp', 'add', 'x', '--command', line]);
    t.equal(r.code, 2, `${line}: exit 2`);
    t.equal(errorCode(r.stderr), 'ALBEDO_INVALID_ARGUMENT');
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    t.equal(r.stdout, '');
  }
  t.notOk(existsSync(path.join(e.home, 'daemon.json')) || existsSync(path.join(e.home, 'daemon.log')), 'no daemon was started');
});
