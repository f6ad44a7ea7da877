// Messages that read the same everywhere (issue 26, item 6), through the real
// CLI against a real daemon: `albedo mcp list` and `albedo status` show the
// same columns in the words of web/shared/labels.js, PROBLEM says why a
// server cannot start; an error line names what was typed (`--url "ftp://…"`,
// `header Host`, `env A`), never an API path or a protocol method, and never
// a secret; commander's refusals are one sentence with the help to read; the
// aliases `ls`, `rm` and `delete`; `albedo open` says how long its link works.
import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pty from 'node-pty';
import { EVERYTHING, NODE, ROOT, newTag, tempHome } from '../helpers.ts';
import { BIN, startDaemon } from '../daemon/harness.ts';
import { authLabel, savedStateLabel, transportOf } from '../../web/shared/labels.js';
import { errorCode, piped, stopDaemonAtTeardown, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

type Tap = Parameters<typeof tempHome>[0];
const TAGGED = ['--env', 'ALBEDO_TEST_TAG=${TEST_SERVER_TAG}'];
const NOWHERE = 'http://127.0.0.1:9/mcp';
const EMPTY = '—';

async function setup(t: Tap): Promise<CliEnv> {
  const e = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  return e;
}

/** A table printed for a person: its header and rows, cells split where two spaces or more part them. */
function tableOf(text: string, first: string): string[][] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(first));
  return lines
    .slice(at)
    .filter(Boolean)
    .map((l) => l.trim().split(/ {2,}/));
}

/** `albedo ARGS` in a terminal `cols` wide: what it wrote, line endings as \n. */
function narrow(e: CliEnv, args: string[], cols: number): Promise<string> {
  const { ALBEDO_TEST_TAG: _drop, ...env } = process.env as Record<string, string>;
  const p = pty.spawn(NODE, [BIN, ...args], { cols, rows: 40, cwd: ROOT, env: { ...env, ALBEDO_HOME: e.home, TEST_SERVER_TAG: e.tag } });
  let out = '';
  p.onData((d) => {
    out += d;
  });
  return new Promise((resolve) => p.onExit(() => resolve(out.replace(/\r\n/g, '\n'))));
}

t.test('mcp list and status: the same columns, the shared labels, and PROBLEM the reason a server cannot start', async (t) => {
  const e = await setup(t);
  const dir = tempHome(t);
  for (const args of [
    ['mcp', 'add', 'every', ...TAGGED, '--', NODE, EVERYTHING, 'stdio'],
    ['mcp', 'add', 'off', '--url', NOWHERE, '--disabled'],
    ['mcp', 'add', 'gone', ...TAGGED, '--cwd', dir, '--', NODE, EVERYTHING, 'stdio'],
  ]) {
    const r = await piped(e, args);
    t.equal(r.code, 0, r.stderr);
  }
  // Saved and tried in its directory; then the directory goes: it cannot start as saved.
  rmSync(dir, { recursive: true });

  const json = JSON.parse((await piped(e, ['mcp', 'list', '--json'])).stdout) as any[];
  const byName = new Map(json.map((s) => [s.name, s]));
  t.equal(byName.get('gone').state, 'error', 'the daemon says the server cannot be prepared');
  const reason = String(byName.get('gone').lastError.message);

  const list = await piped(e, ['mcp', 'list']);
  t.equal(list.code, 0, list.stderr);
  const [lh, ...lrows] = tableOf(list.stdout, 'NAME');
  t.same(lh, ['NAME', 'TYPE', 'STATE', 'TOOLS', 'SIGN-IN', 'TARGET', 'PROBLEM'], 'mcp list: the shared columns, TARGET before PROBLEM');
  const status = await piped(e, ['status']);
  t.equal(status.code, 0, status.stderr);
  const [sh, ...srows] = tableOf(status.stdout, 'NAME');
  t.same(sh, ['NAME', 'TYPE', 'STATE', 'TOOLS', 'SIGN-IN', 'PROBLEM'], 'status: the same columns');
  t.equal(lrows.length, 3);
  for (const [i, row] of lrows.entries()) {
    const s = byName.get(row[0]!);
    const transport = transportOf(s.config);
    const words = [
      s.name,
      transport,
      savedStateLabel(s.state).text,
      s.tools === null ? EMPTY : String(s.tools),
      authLabel(s.auth, transport).text,
    ];
    t.same(row.slice(0, 5), words, `${s.name}: the words of web/shared/labels.js`);
    t.same(srows[i], [...row.slice(0, 5), row[6]], `${s.name}: status shows the same cells`);
  }
  const gone = lrows.find((r) => r[0] === 'gone')!;
  t.equal(gone[2], 'cannot start as saved');
  t.equal(gone[3], EMPTY, 'no tools saved: the empty mark');
  t.match(gone[6], /is not an existing directory/, 'PROBLEM: the reason, not only the code');
  t.ok(gone[6]!.includes(dir), 'naming the directory');
  t.notMatch(gone[6], /^gone: |ALBEDO_/, 'without the name the row shows, or the code');
  t.equal(lrows.find((r) => r[0] === 'every')![6], EMPTY, 'nothing wrong: the empty mark');
  t.equal(lrows.find((r) => r[0] === 'off')![2], savedStateLabel('disabled').text, '"disabled" is a state, not a column');

  const js = JSON.parse((await piped(e, ['status', '--json'])).stdout);
  t.match(
    js.servers.find((s: any) => s.name === 'gone'),
    { type: 'stdio', enabled: true, state: 'error', tools: null, auth: null, lastError: 'ALBEDO_INVALID_CONFIG', problem: reason },
    'status --json: the fields it had, with the type and the whole problem',
  );

  const show = await piped(e, ['mcp', 'show', 'gone']);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /^ {2}state: +cannot start as saved$/m);
  const problem = show.stdout.split('\n').find((l) => l.startsWith('  problem:'));
  t.ok(
    problem?.endsWith(`${dir} is not an existing directory (ALBEDO_INVALID_CONFIG)`),
    `mcp show: the problem in full, with its code: ${problem}`,
  );

  const cut = await narrow(e, ['status'], 72);
  const lines = cut.split('\n').filter((l) => l.startsWith('gone '));
  t.equal(lines.length, 1, cut);
  t.ok(lines[0]!.length <= 72 && lines[0]!.endsWith('…'), `on a terminal, PROBLEM is cut to its width: ${lines[0]}`);
});

t.test('error lines for a person: what was typed, no API path, no protocol method, no secret', async (t) => {
  const e = await setup(t);
  const add = ['mcp', 'add', 'x'];
  const cases: Array<{ args: string[]; exit: number; says: RegExp; code?: string }> = [
    { args: [...add, '--url', 'ftp://127.0.0.1/mcp'], exit: 2, says: /: --url "ftp:\/\/127\.0\.0\.1\/mcp" must be an http or https URL$/ },
    { args: [...add, '--url', 'not a url'], exit: 2, says: /--url "not a url" is not a URL$/ },
    { args: [...add, '--url', NOWHERE, '--header', 'Host: s3cret-value'], exit: 2, says: /header "Host": Albedo sets this header itself$/ },
    { args: [...add, '--url', NOWHERE, '--header', 'Host: ${HOST_VAR}'], exit: 2, says: /header Host: Albedo sets this header itself$/ },
    {
      args: [...add, '--env', 'A=${ALBEDO_WORDING_UNSET}', '--', NODE, EVERYTHING, 'stdio'],
      exit: 1,
      says: /env A: .*ALBEDO_WORDING_UNSET/,
    },
    {
      args: [...add, '--cwd', '/nonexistent/dir', '--', NODE, EVERYTHING, 'stdio'],
      exit: 1,
      says: /\/nonexistent\/dir is not an existing directory/,
    },
    { args: [...add, '--url', NOWHERE], exit: 1, says: /127\.0\.0\.1:9/, code: 'ALBEDO_CONNECTION_CLOSED' },
    { args: ['mcp', 'show', 'nope'], exit: 4, says: /no server "nope"/, code: 'ALBEDO_NOT_FOUND' },
    { args: ['mcp', 'edit', 'nope', '--call-timeout', '5000'], exit: 4, says: /no server "nope"/, code: 'ALBEDO_NOT_FOUND' },
    { args: ['mcp', 'add', '..', '--', NODE, EVERYTHING], exit: 2, says: /a server name cannot be "\.\."/ },
  ];
  for (const c of cases) {
    const r = await piped(e, c.args);
    const line = r.stderr.trim();
    t.equal(r.code, c.exit, `${c.args.join(' ')}: exit ${c.exit} (${line})`);
    t.equal(line.split('\n').length, 1, 'one line');
    if (c.code) t.equal(errorCode(line), c.code);
    t.match(line, c.says, `${c.args.join(' ')}: ${line}`);
    t.notMatch(line, /\bbody\.|\bparams\.|\(at |server\/discover|initialize|tools\/list/, 'no API path, no protocol method');
    t.notOk(line.includes('s3cret-value'), 'no header value');
    t.equal(line.match(/albedo:/g)?.length, 1, 'albedo: said once');
  }
});

t.test('commander refusals: one sentence, a did-you-mean of its own, the help to read', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const cases: Array<[string[], RegExp]> = [
    [['mcp', 'lst'], /: unknown command "lst"; did you mean "list"\? \(albedo mcp --help\)$/],
    [['mcp', 'rmove', 'x'], /: unknown command "rmove"; did you mean "remove"\? \(albedo mcp --help\)$/],
    [['mcp', 'list', '--jsn'], /: unknown option "--jsn"; did you mean "--json"\? \(albedo mcp list --help\)$/],
    [['status', 'extra'], /: too many arguments for "status": expected 0 arguments but got 1 \(albedo status --help\)$/],
    [['mcp', 'add', 'x', '--url'], /: --url needs a value \(albedo mcp add --help\)$/],
    [['frobnicate'], /: unknown command "frobnicate" \(albedo --help\)$/],
  ];
  for (const [args, says] of cases) {
    const r = await piped(e, args);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
    t.equal(r.stdout, '');
    const line = r.stderr.trim();
    t.equal(line.split('\n').length, 1, 'one line');
    t.equal(errorCode(line), 'ALBEDO_INVALID_ARGUMENT');
    t.match(line, says, line);
    t.notMatch(line, / \| |'|Did you mean/, "nothing glued on, commander's quotes and words gone");
  }
});

t.test('aliases: mcp ls, mcp rm, mcp delete; the help shows them', async (t) => {
  const e = await setup(t);
  for (const name of ['a', 'b']) t.equal((await piped(e, ['mcp', 'add', name, '--url', NOWHERE, '--disabled'])).code, 0);
  const ls = await piped(e, ['mcp', 'ls', '--json']);
  t.equal(ls.code, 0, ls.stderr);
  t.same(JSON.parse(ls.stdout), JSON.parse((await piped(e, ['mcp', 'list', '--json'])).stdout), 'ls is list');
  const del = await piped(e, ['mcp', 'delete', 'a', '--json']);
  t.equal(del.code, 0, del.stderr);
  t.same(JSON.parse(del.stdout), { removed: 'a' });
  const rm = await piped(e, ['mcp', 'rm', 'b']);
  t.equal(rm.code, 0, rm.stderr);
  t.same(JSON.parse((await piped(e, ['mcp', 'ls', '--json'])).stdout), [], 'both removed');
  t.equal((await piped(e, ['mcp', 'delete', 'a'])).code, 4, 'delete of no such server: exit 4, as remove');
  const help = await piped(e, ['mcp', '--help']);
  t.match(help.stdout, /^ {2}list\|ls /m);
  t.match(help.stdout, /^ {2}remove\|rm\|delete /m);
});

t.test('albedo open says how long its link works, not a UTC timestamp', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag(), env: { ALBEDO_NO_BROWSER: '1' } };
  stopDaemonAtTeardown(t, e);
  const r = await piped(e, ['open']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /login link works once, for 15 minutes$/m);
  t.notMatch(r.stderr, /\d{4}-\d\d-\d\dT/, 'no timestamp');
  const j = JSON.parse((await piped(e, ['open', '--json'])).stdout);
  t.ok(Date.parse(j.expiresAt) > Date.now(), '--json keeps expiresAt');
});

t.test('a daemon that cannot start: its own prefix is not said again in the one line', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  writeFileSync(path.join(e.home, 'store'), 'not a directory');
  const r = await piped(e, ['mcp', 'list']);
  t.equal(r.code, 3, r.stderr);
  const line = r.stderr
    .trim()
    .split('\n')
    .find((l) => l.startsWith('albedo: ALBEDO_'))!;
  t.equal(errorCode(line), 'ALBEDO_DAEMON_UNREACHABLE');
  t.match(line, /EEXIST/, 'why, from its log');
  t.equal(line.match(/albedo( daemon)?:/g)?.length, 1, `"albedo:" once: ${line}`);
});
