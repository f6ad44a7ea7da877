// Slow and failing strict saves (issue 26, item 3): a progress line on a
// terminal while a server is tried (nothing on a pipe; Ctrl-C leaves the
// terminal as it was), a failure said in plain words with the server's last
// stderr lines (redacted, escaped) and no protocol method, the lists' state
// words in a save's result, and `mcp import --yes` trying servers at once —
// proved by a barrier, not by a clock: each server waits until all three
// have started — with every reason printed in full.
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import pty from 'node-pty';
import { NODE, ROOT, fixture, newTag, tempHome, until } from '../helpers.ts';
import { BIN, startDaemon } from '../daemon/harness.ts';
import { errorCode, piped, type CliEnv } from './cli-harness.ts';
import { savedStateLabel, toolsLabel } from '../../web/shared/labels.js';

t.setTimeout(170_000);

type Tap = Parameters<typeof tempHome>[0];
const SLOW = path.join(ROOT, 'test', 'cli', 'fixtures', 'slow-server.ts');
const SDK = fixture('sdk-server.ts');
const TAGGED = ['--env', 'ALBEDO_TEST_TAG=${TEST_SERVER_TAG}'];
/** A frame of the progress line (bin/client/progress.ts): its spinner, then what it does. */
const FRAME = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] /;
const HIDE_CURSOR = '\x1b[?25l';

async function setup(t: Tap): Promise<CliEnv> {
  const e = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  return e;
}

interface Live {
  /** Everything the terminal was sent so far, as sent (escape sequences included). */
  raw(): string;
  waitFor(re: RegExp | string, what?: string): Promise<void>;
  write(s: string): void;
  exited: Promise<{ exitCode: number; signal?: number }>;
}

/** `albedo ARGS` in a terminal of `cols` columns, watched while it runs. */
function live(t: Tap, e: CliEnv, args: string[], cols = 120): Live {
  const { ALBEDO_TEST_TAG: _drop, ...base } = process.env as Record<string, string>;
  const p = pty.spawn(NODE, [BIN, ...args], { cols, rows: 40, cwd: ROOT, env: { ...base, ALBEDO_HOME: e.home, TEST_SERVER_TAG: e.tag } });
  let raw = '';
  let done = false;
  p.onData((d) => {
    raw += d;
  });
  const exited = new Promise<{ exitCode: number; signal?: number }>((resolve) =>
    p.onExit((x) => {
      done = true;
      resolve(x);
    }),
  );
  t.teardown(() => {
    if (!done) p.kill('SIGKILL');
  });
  return {
    raw: () => raw,
    waitFor: (re, what = String(re)) => until(() => (typeof re === 'string' ? raw.includes(re) : re.test(raw)), 60_000, what),
    write: (s) => p.write(s),
    exited,
  };
}

/** A Claude Desktop config of `servers` (name → entry), each tagged so no process of the test outlives it. */
function claudeFile(e: CliEnv, servers: Record<string, Record<string, unknown>>): string {
  const file = path.join(e.home, `claude-${Object.keys(servers).join('-')}.json`);
  const tagged = Object.fromEntries(Object.entries(servers).map(([n, s]) => [n, { ...s, env: { ALBEDO_TEST_TAG: e.tag } }]));
  writeFileSync(file, JSON.stringify({ mcpServers: tagged }));
  return file;
}
const slow = (...args: string[]): Record<string, unknown> => ({ command: NODE, args: [SLOW, ...args] });
const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

t.test('a failed strict save says what happened in plain words, with the last stderr lines, and no protocol method', async (t) => {
  const e = await setup(t);
  const secret = 'sekret-value-4242';
  const hang = await piped(e, [
    'mcp',
    'add',
    'hang',
    ...TAGGED,
    '--env',
    `API_KEY=${secret}`,
    '--startup-timeout',
    '1500',
    '--',
    NODE,
    SLOW,
    '--hang',
    '--say',
    'loading the model',
    '--say',
    `the key is ${secret}`,
    '--say',
    '\x1b[31mred\x1b[0m',
  ]);
  t.equal(hang.code, 1, hang.stderr);
  t.equal(errorCode(hang.stderr), 'ALBEDO_TIMEOUT', 'the code is as stable as before');
  t.match(hang.stderr, /hang did not answer within 1\.5 s/, 'what happened, for a person');
  t.match(hang.stderr, /loading the model/, "the server's last stderr lines");
  t.notOk(hang.stderr.includes(secret), 'a secret the server printed is cut out');
  t.match(hang.stderr, /the key is \[redacted\]/);
  t.notOk(hang.stderr.includes('\x1b'), 'no control character reaches the terminal');
  t.match(hang.stderr, /\\x1b\[31mred/, 'it is shown escaped');
  t.notMatch(hang.stderr, /server\/discover|initialize/, 'no protocol method named');
  t.notOk(existsSync(path.join(e.home, 'extensions.json')), 'nothing saved');

  const exits = await piped(e, ['mcp', 'add', 'exits', ...TAGGED, '--', NODE, SLOW, '--exit', '3', '--say', 'missing API key']);
  t.equal(exits.code, 1, exits.stderr);
  t.equal(errorCode(exits.stderr), 'ALBEDO_SERVER_EXITED');
  t.match(exits.stderr, /exits exited with status 3/);
  t.match(exits.stderr, /missing API key/);
  t.notMatch(exits.stderr, /server\/discover|initialize/);

  // A port nothing listens on (taken, then let go).
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = srv.address() as AddressInfo;
      srv.close(() => resolve(p));
    });
  });
  const refused = await piped(e, ['mcp', 'add', 'web', '--url', `http://127.0.0.1:${port}/mcp`]);
  t.equal(refused.code, 1, refused.stderr);
  t.match(refused.stderr, new RegExp(`http://127\\.0\\.0\\.1:${port} refused the connection`));
  t.notMatch(refused.stderr, /server\/discover|initialize/);
});

t.test("a save's result uses the state words of the lists", async (t) => {
  const e = await setup(t);
  const added = await piped(e, ['mcp', 'add', 'sdk', ...TAGGED, '--', NODE, SDK]);
  t.equal(added.code, 0, added.stderr);
  const n = Number(/, (\d+) tools$/m.exec(added.stdout)?.[1]);
  t.equal(added.stdout.trim(), `added sdk: ${savedStateLabel('discovered').text}, ${toolsLabel(n)}`, 'discovered, as every list says');
  const off = await piped(e, ['mcp', 'disable', 'sdk']);
  t.equal(off.stdout.trim(), `saved sdk: ${savedStateLabel('disabled').text}, so not tried`);
  t.equal(added.stderr, '', 'on a pipe: no progress, only the result');
});

t.test('import --yes on a terminal: a progress line while a slow server starts, cleared; on a pipe, none', async (t) => {
  const e = await setup(t);
  const go = path.join(e.home, 'go');
  const file = claudeFile(e, { slow: slow('--go', go) });
  const run = live(t, e, ['mcp', 'import', '--from', 'claude', file, '--yes']);
  await run.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] trying slow \(0 of 1 done\)…/, 'the progress line');
  writeFileSync(go, '');
  const { exitCode } = await run.exited;
  t.equal(exitCode, 0, run.raw());
  t.match(run.raw(), /\r\x1b\[2Kfrom claude: [^\n]*\n[^\n]*\n\s*added\s+slow\s+stdio/, 'the line was cleared before the report');
  t.notOk(run.raw().includes(HIDE_CURSOR), 'the cursor was never hidden');

  const log = path.join(e.home, 'started');
  const later = path.join(e.home, 'go-later');
  const file2 = claudeFile(e, { later: slow('--log', log, '--name', 'later', '--go', later) });
  const pipe = piped(e, ['mcp', 'import', '--from', 'claude', file2, '--yes']);
  await until(() => lines(log).length === 1, 60_000, 'the server started');
  writeFileSync(later, '');
  const r = await pipe;
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^added\s+later\s/m);
  t.equal(r.stderr, '', 'nothing on a pipe but the result');

  // --json on a terminal: the one document is all it prints.
  const last = path.join(e.home, 'go-json');
  const json = live(t, e, [
    'mcp',
    'import',
    '--from',
    'claude',
    claudeFile(e, { json: slow('--log', log, '--name', 'json', '--go', last) }),
    '--yes',
    '--json',
  ]);
  await until(() => lines(log).length === 2, 60_000, 'the server started');
  writeFileSync(last, '');
  t.equal((await json.exited).exitCode, 0, json.raw());
  t.match(JSON.parse(json.raw()), { servers: [{ name: 'json', outcome: 'added' }] }, 'no progress around the JSON');
});

t.test('Ctrl-C while the progress line shows: the line is cleared and the command ends as before', async (t) => {
  const e = await setup(t);
  const go = path.join(e.home, 'go');
  const run = live(t, e, ['mcp', 'import', '--from', 'claude', claudeFile(e, { stuck: slow('--go', go) }), '--yes']);
  await run.waitFor(/trying stuck/, 'the progress line');
  run.write('\x03');
  const { signal } = await run.exited;
  t.equal(signal, 2, 'ended by SIGINT, as without the progress line');
  const raw = run.raw();
  const lastFrame = Math.max(...[...raw.matchAll(new RegExp(FRAME.source, 'g'))].map((m) => m.index));
  t.ok(raw.slice(lastFrame).includes('\r\x1b[2K'), 'the last frame was cleared');
  t.notOk(raw.includes(HIDE_CURSOR), 'the cursor was never hidden');
  // The daemon goes on with the save it was asked for; let it finish.
  writeFileSync(go, '');
});

t.test('import --yes tries servers at once (each waits until all three started) and reports in the file order', async (t) => {
  const e = await setup(t);
  const log = path.join(e.home, 'started');
  const three = {
    c: slow('--log', log, '--name', 'c', '--barrier', '3'),
    a: slow('--log', log, '--name', 'a', '--barrier', '3'),
    b: slow('--log', log, '--name', 'b', '--barrier', '3'),
  };
  const r = await piped(e, ['mcp', 'import', '--from', 'claude', claudeFile(e, three), '--yes', '--json']);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.same(
    out.servers.map((s: any) => [s.name, s.outcome]),
    [
      ['c', 'added'],
      ['a', 'added'],
      ['b', 'added'],
    ],
    'all added, in the file order',
  );
  t.same(lines(log).sort(), ['a', 'b', 'c'], 'all three were running before any could answer');

  const again = await piped(e, ['mcp', 'import', '--from', 'claude', claudeFile(e, three), '--yes', '--replace']);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /^added\s+c\s.*\n^added\s+a\s.*\n^added\s+b\s/m, 'the report in the file order');

  const bad = await piped(e, ['mcp', 'import', '--from', 'claude', claudeFile(e, three), '--yes', '--jobs', '0']);
  t.equal(bad.code, 2, 'a --jobs out of range is bad usage');
  t.equal(errorCode(bad.stderr), 'ALBEDO_INVALID_ARGUMENT');
});

t.test('import prints every reason in full, on lines of its own (wrapped on a terminal), not cut to a cell', async (t) => {
  const e = await setup(t);
  const long = `stderr-line-${'abcdefghij'.repeat(18)}-end`;
  const file = claudeFile(e, { crash: slow('--exit', '3', '--say', 'first words', '--say', long), odd: { args: ['x'] } });
  const r = await piped(e, ['mcp', 'import', '--from', 'claude', file, '--yes']);
  t.equal(r.code, 1, r.stderr);
  const failed = new RegExp(
    String.raw`^FAILED\s+crash\s.*\n {4}ALBEDO_SERVER_EXITED: crash exited with status 3\b.*\n` +
      String.raw` {4}its working directory: \/.*\n {4}its stderr ends:\n {4}first words\n`,
    'm',
  );
  t.match(r.stdout, failed);
  t.ok(r.stdout.includes(`\n    ${long}\n`), 'the long stderr line whole, on its own line');
  t.match(r.stdout, /^skip\s+odd\s.*\n {4}invalid: neither a command nor a url$/m);

  const narrow = live(t, e, ['mcp', 'import', '--from', 'claude', file, '--yes'], 60);
  t.equal((await narrow.exited).exitCode, 1);
  const screen = narrow.raw().replace(/\r\n/g, '\n');
  t.ok(screen.replace(/\n {4}/g, '').includes(long), 'on a narrow terminal, wrapped under the row, every character there');
  // The lines under the rows (the header row starts with spaces too: its first column has no title).
  const reasons = screen.split('\n').filter((l) => l.startsWith('    ') && !/\bNAME\b/.test(l));
  t.ok(reasons.length > 4, 'the reasons are there');
  t.ok(
    reasons.every((l) => l.length <= 60),
    'no reason line wider than the terminal',
  );
});

t.test('add on a terminal shows the progress line while its server starts', async (t) => {
  const e = await setup(t);
  const go = path.join(e.home, 'go');
  const run = live(t, e, ['mcp', 'add', 'slowly', ...TAGGED, '--', NODE, SLOW, '--go', go]);
  await run.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] trying slowly…/, 'the progress line');
  writeFileSync(go, '');
  t.equal((await run.exited).exitCode, 0, run.raw());
  t.match(run.raw(), /\r\x1b\[2Kadded slowly: discovered/);
});
