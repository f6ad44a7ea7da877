// `albedo mcp import` with hostile files (issue 11, hardening): a device, a
// FIFO, a directory or a file over 16 MiB is refused without being read, a
// document nested 200,000 levels deep is a bad config in every format (not
// an internal error, whether or not its parser runs out of stack), server names the daemon would refuse are skipped as `invalid`,
// and a variable named `__proto__` stays a variable like any other.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { settingsNameProblem } from '../../protocol/settings.ts';
import { serverNameProblem } from '../../bin/import/plan.ts';
import { entryParts, putBody } from '../../bin/commands/entry.ts';
import { errorCode, piped, stopDaemonAtTeardown } from './cli-harness.ts';

t.setTimeout(170_000);

const DEPTH = 200_000;

t.test('files that are not config files are refused before they are read (exit 1, ALBEDO_INVALID_CONFIG), asking no daemon', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const dir = path.join(e.home, 'files');
  mkdirSync(dir);
  const big = path.join(dir, 'big.json');
  // Sparse: 17 MiB long, nothing written.
  const fd = openSync(big, 'w');
  ftruncateSync(fd, 17 * 1024 * 1024);
  closeSync(fd);
  const fifo = path.join(dir, 'fifo.json');
  t.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
  const deep = (name: string, text: string): string => {
    writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  const nested = `{"mcpServers":{"a":{"command":"x","args":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}}}`;
  const cases: Array<[string, string]> = [
    ['claude', '/dev/zero'],
    ['claude', fifo],
    ['vscode', dir],
    ['claude', big],
    ['vscode', deep('deep.jsonc', nested)],
    ['cursor', deep('deep-cursor.json', nested)],
    ['claude', deep('deep.json', nested)],
    ['gemini', deep('deep-obj.json', `{"mcpServers":${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}}`)],
    ['codex', deep('deep.toml', `[mcp_servers.a]\ncommand="x"\nargs=${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}\n`)],
  ];
  for (const [from, file] of cases) {
    const r = await piped(e, ['mcp', 'import', '--from', from, file]);
    t.equal(r.code, 1, `${from} ${path.basename(file)}: exit 1 (${r.stderr.trim()})`);
    t.equal(errorCode(r.stderr), 'ALBEDO_INVALID_CONFIG', `${from} ${path.basename(file)}: a bad config`);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
  }
  t.notOk(existsSync(path.join(e.home, 'daemon.json')), 'no daemon was asked (none was started)');
});

t.test('the CLI refuses the server names the daemon refuses (protocol/settings.ts), and no others', async (t) => {
  const names = [
    '',
    '.',
    '..',
    '__proto__',
    'constructor',
    'prototype',
    'a\x1bb',
    'tab\there',
    'nl\n',
    'del\x7f',
    'c1\x85',
    'ok',
    'a.b',
    '...',
    'x/y',
    'Proto',
    '__proto',
    'constructors',
    'naïve',
    '-x',
    ' ',
  ];
  for (const n of names) t.equal(serverNameProblem(n) !== undefined, settingsNameProblem(n) !== undefined, JSON.stringify(n));
});

t.test('import skips names the daemon would refuse as invalid, and keeps an env variable named __proto__', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const file = path.join(e.home, 'claude_desktop_config.json');
  // Written as text: a JSON object literal in JS would make "__proto__" the prototype, not a key.
  writeFileSync(
    file,
    '{"mcpServers":{"__proto__":{"command":"/bin/true"},"constructor":{"command":"/bin/true"},".":{"command":"/bin/true"},' +
      '"..":{"command":"/bin/true"},"esc\\u001b]0;x\\u0007":{"command":"/bin/true"},' +
      '"ok":{"command":"/bin/true","env":{"__proto__":"proto-secret","A":"secret-a"}}}}',
  );
  const r = await piped(e, ['mcp', 'import', '--from', 'claude', file, '--json']);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  const byName = new Map<string, any>(out.servers.map((s: any) => [s.name, s]));
  for (const n of ['__proto__', 'constructor', '.', '..', 'esc\x1b]0;x\x07']) {
    t.match(byName.get(n), { outcome: 'skipped', reason: 'invalid' }, `${JSON.stringify(n)}: skipped as invalid`);
  }
  t.match(byName.get('ok'), { outcome: 'would_add' });
  t.same(byName.get('ok').secrets.sort(), ['env A', 'env __proto__'], 'the __proto__ variable is kept, as a secret like A');

  const human = await piped(e, ['mcp', 'import', '--from', 'claude', file]);
  t.equal(human.code, 0);
  t.notMatch(human.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/, 'the preview shows the hostile name escaped');

  // Claude Code's ${VAR}: a named variable under the key __proto__, in the entry itself.
  const code = path.join(e.home, 'mcp.json');
  writeFileSync(code, '{"mcpServers":{"named":{"command":"/bin/true","env":{"__proto__":"${SOME_VAR}"}}}}');
  const named = JSON.parse((await piped(e, ['mcp', 'import', '--from', 'claude-code', code, '--json'])).stdout);
  t.same(named.servers[0].entry.env, JSON.parse('{"__proto__":{"env":"SOME_VAR"}}'), 'an own key __proto__ in the entry');
  t.ok(Object.hasOwn(named.servers[0].entry.env, '__proto__'));
});

t.test('mcp add --env __proto__=VALUE: an own key of what is sent', async (t) => {
  const body = putBody(entryParts({ env: ['__proto__=typed', 'B=${NAMED}'] }, ['/bin/true']), true);
  const sent = JSON.parse(JSON.stringify(body));
  t.ok(Object.hasOwn(sent.secrets.env, '__proto__'), 'secrets.env.__proto__ is sent');
  t.equal(sent.secrets.env.__proto__, 'typed');
  t.same(sent.env, { B: { env: 'NAMED' } });
  const named = JSON.parse(JSON.stringify(putBody(entryParts({ env: ['__proto__=${V}'] }, ['/bin/true']), true)));
  t.ok(Object.hasOwn(named.env, '__proto__'), 'a named __proto__ is an own key of env');
});
