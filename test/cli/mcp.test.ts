// `albedo mcp list|show|add|edit|remove|enable|disable` in a real terminal
// against the real daemon (issue 11, item 3): --json shapes and exit codes,
// secrets typed on the command line stored by the daemon and never written
// to extensions.json, --command split by shell quoting rules, strict-save
// refusals that change nothing, and bad usage → exit 2.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { startDaemon, type Daemon } from '../daemon/harness.ts';
import { errorCode, screenJson, term, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

type Tap = Parameters<typeof tempHome>[0];
const SDK = fixture('sdk-server.ts');
const TAGGED = ['--env', 'ALBEDO_TEST_TAG=${TEST_SERVER_TAG}'];
const ext = (home: string): string =>
  existsSync(path.join(home, 'extensions.json')) ? readFileSync(path.join(home, 'extensions.json'), 'utf8') : '';

async function setup(t: Tap, env: Record<string, string> = {}): Promise<{ e: CliEnv; d: Daemon }> {
  const e = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag, env });
  return { e, d };
}

t.test('add, list, show, edit, disable, enable, remove: --json shapes and exit codes', async (t) => {
  const { e } = await setup(t);
  const empty = await term(e, ['mcp', 'list', '--json']);
  t.equal(empty.code, 0);
  t.same(screenJson(empty), []);

  const added = await term(e, ['mcp', 'add', 'sdk', ...TAGGED, '--env', 'DOCS_TOKEN=typed-secret-1', '--json', '--', NODE, SDK]);
  t.equal(added.code, 0, added.screen);
  const a = screenJson(added);
  t.match(a, { saved: true, created: true, check: { tried: true, result: 'connected' }, server: { name: 'sdk', enabled: true } });
  t.same([a.server.config.command, ...a.server.config.args], [NODE, SDK]);
  t.same(a.server.config.env, { ALBEDO_TEST_TAG: { env: 'TEST_SERVER_TAG' } }, 'the named variable is in the entry');
  t.same(a.server.secrets.env, ['DOCS_TOKEN'], 'the literal value is a stored secret');
  t.ok(a.server.tools > 0, 'the strict save kept what it discovered');
  t.notOk(ext(e.home).includes('typed-secret-1'), 'no secret value in extensions.json');
  t.notOk(added.screen.includes('typed-secret-1'), 'nor in the output');

  const list = await term(e, ['mcp', 'list', '--json']);
  t.equal(list.code, 0);
  t.match(screenJson(list), [{ name: 'sdk', enabled: true, secrets: { env: ['DOCS_TOKEN'] }, lastError: null }]);
  const human = await term(e, ['mcp', 'list']);
  t.equal(human.code, 0);
  t.match(human.screen, /^sdk\s+stdio\s+discovered\s+\d+\s/m, 'a line for the server: its state in the shared words');
  const shown = await term(e, ['mcp', 'show', 'sdk', '--json']);
  t.equal(shown.code, 0);
  t.match(screenJson(shown), { name: 'sdk', config: { command: NODE } });

  const before = ext(e.home);
  const dup = await term(e, ['mcp', 'add', 'sdk', '--', NODE, SDK]);
  t.equal(dup.code, 1, 'adding an existing name is refused');
  t.equal(errorCode(dup.screen), 'ALBEDO_PRECONDITION_FAILED');
  t.equal(ext(e.home), before, 'and changes nothing');

  const edited = await term(e, ['mcp', 'edit', 'sdk', '--env', 'DOCS_TOKEN=typed-secret-2', '--call-timeout', '5000', '--json']);
  t.equal(edited.code, 0, edited.screen);
  t.match(screenJson(edited), {
    saved: true,
    created: false,
    check: { tried: true, result: 'connected' },
    server: { config: { callTimeoutMs: 5000 } },
  });
  t.notOk(ext(e.home).includes('typed-secret-2'));

  const kept = ext(e.home);
  const refused = await term(e, ['mcp', 'edit', 'sdk', '--env', 'MODE=${ALBEDO_CLI_TEST_NOT_SET}']);
  t.equal(refused.code, 1, 'a variable the daemon does not have: the strict save refuses the edit');
  t.equal(errorCode(refused.screen), 'ALBEDO_INVALID_CONFIG');
  t.equal(ext(e.home), kept, 'byte for byte unchanged');
  const nothing = await term(e, ['mcp', 'edit', 'sdk']);
  t.equal(nothing.code, 2, 'an edit that changes nothing is bad usage');

  const unset = await term(e, ['mcp', 'edit', 'sdk', '--unset-env', 'DOCS_TOKEN', '--json']);
  t.equal(unset.code, 0, unset.screen);
  t.same(screenJson(unset).server.secrets.env, [], 'the stored variable is removed');

  const off = await term(e, ['mcp', 'disable', 'sdk', '--json']);
  t.equal(off.code, 0);
  t.match(screenJson(off), { saved: true, check: { tried: false, reason: 'disabled' }, server: { enabled: false } });
  const on = await term(e, ['mcp', 'enable', 'sdk', '--json']);
  t.equal(on.code, 0);
  t.match(screenJson(on), { saved: true, check: { tried: true, result: 'connected' }, server: { enabled: true } });

  const removed = await term(e, ['mcp', 'remove', 'sdk', '--json']);
  t.equal(removed.code, 0);
  t.same(screenJson(removed), { removed: 'sdk' });
  t.same(screenJson(await term(e, ['mcp', 'list', '--json'])), []);
  for (const args of [
    ['mcp', 'remove', 'sdk'],
    ['mcp', 'show', 'sdk'],
    ['mcp', 'enable', 'sdk'],
    ['mcp', 'edit', 'sdk', '--call-timeout', '9'],
  ]) {
    const r = await term(e, args);
    t.equal(r.code, 4, `${args.join(' ')}: exit 4`);
    t.equal(errorCode(r.screen), 'ALBEDO_NOT_FOUND');
  }
});

t.test('--command is split by shell quoting rules and no shell runs; a server that cannot start is refused', async (t) => {
  const { e } = await setup(t);
  const line = `'${NODE}' ${SDK} --label 'my docs' "say \\"hi\\"" plain\\ word`;
  const r = await term(e, ['mcp', 'add', 'quoted', ...TAGGED, '--command', line, '--json']);
  t.equal(r.code, 0, r.screen);
  const s = screenJson(r).server;
  t.equal(s.config.command, NODE);
  t.same(s.config.args, [SDK, '--label', 'my docs', 'say "hi"', 'plain word'], 'quotes and escapes as a shell reads them');

  for (const bad of [`${NODE} ${SDK} | tee log`, `${NODE} $HOME/server.js`, `${NODE} *.ts`, `${NODE} ${SDK} > out`]) {
    const b = await term(e, ['mcp', 'add', 'bad', '--command', bad]);
    t.equal(b.code, 2, `${bad}: exit 2`);
    t.equal(errorCode(b.screen), 'ALBEDO_INVALID_ARGUMENT');
  }
  const before = ext(e.home);
  const spawnFail = await term(e, ['mcp', 'add', 'missing', '--command', "/nonexistent/mcp-server 'a b'"]);
  t.equal(spawnFail.code, 1);
  t.equal(errorCode(spawnFail.screen), 'ALBEDO_SPAWN_FAILED', "the strict save's code");
  const exits = await term(e, ['mcp', 'add', 'exits', '--', NODE, '-e', 'process.exit(3)']);
  t.equal(exits.code, 1);
  t.equal(errorCode(exits.screen), 'ALBEDO_SERVER_EXITED');
  t.equal(ext(e.home), before, 'nothing saved');
  const dry = await term(e, ['mcp', 'add', 'dry', ...TAGGED, '--dry-run', '--json', '--', NODE, SDK]);
  t.equal(dry.code, 0);
  t.match(screenJson(dry), { saved: false, check: { tried: true, result: 'connected' } });
  t.equal(ext(e.home), before, 'a dry run saves nothing');
});

t.test("http servers: header and bearer values are stored secrets, ${VAR} names the daemon's variable", async (t) => {
  const { e } = await setup(t, { WEB_TOKEN: 'tok-123' });
  const srv = await httpFixture(t, e.tag, fixture('sdk-http-server.ts'), ['--bearer', 'tok-123']);
  const typed = await term(e, [
    'mcp',
    'add',
    'web',
    '--url',
    srv.url,
    '--header',
    'Authorization: Bearer tok-123',
    '--header',
    'X-Tenant: acme-7',
    '--json',
  ]);
  t.equal(typed.code, 0, typed.screen);
  t.match(
    screenJson(typed),
    { check: { result: 'connected' }, server: { secrets: { bearer: true, header: 'X-Tenant' } } },
    'the server took the stored bearer',
  );
  const named = await term(e, [
    'mcp',
    'add',
    'web-env',
    '--url',
    srv.url,
    '--bearer-env',
    'WEB_TOKEN',
    '--header',
    'X-Tenant: ${WEB_TENANT_UNSET}',
    '--dry-run',
  ]);
  t.equal(named.code, 1, 'a named header variable the daemon lacks is refused');
  const byVar = await term(e, ['mcp', 'add', 'web-env', '--url', srv.url, '--bearer-env', 'WEB_TOKEN', '--json']);
  t.equal(byVar.code, 0, byVar.screen);
  t.match(screenJson(byVar), {
    check: { result: 'connected' },
    server: { config: { bearerTokenEnvVar: 'WEB_TOKEN' }, secrets: { bearer: false } },
  });
  const noToken = await term(e, ['mcp', 'add', 'web-none', '--url', srv.url, '--json']);
  t.equal(noToken.code, 0, 'a server that answers 401 is kept, needing a sign-in');
  t.match(screenJson(noToken), { saved: true, check: { tried: true, result: 'needs_sign_in' } });
  const file = ext(e.home);
  t.notOk(file.includes('tok-123') || file.includes('acme-7'), 'no header or token value in extensions.json');
  const edited = await term(e, ['mcp', 'edit', 'web', '--unset-header', 'X-Tenant', '--json']);
  t.equal(edited.code, 0, edited.screen);
  t.match(screenJson(edited), { server: { secrets: { bearer: true, header: null } } });
});

t.test('bad usage: exit 2 and one error line, nothing sent or saved', async (t) => {
  const { e } = await setup(t);
  const url = 'http://127.0.0.1:9/mcp';
  const cases: string[][] = [
    ['mcp', 'add', 'x'],
    ['mcp', 'add'],
    ['mcp', 'add', 'x', '--url', url, '--', NODE, SDK],
    ['mcp', 'add', 'x', NODE, SDK],
    ['mcp', 'add', 'x', '--nope', '--', NODE, SDK],
    ['mcp', 'add', 'x', '--url', 'ftp://127.0.0.1/mcp'],
    ['mcp', 'add', 'x', '--url', url, '--env', 'A=1'],
    ['mcp', 'add', 'x', '--env', '1BAD=2', '--', NODE, SDK],
    ['mcp', 'add', 'x', '--env', 'EMPTY=', '--', NODE, SDK],
    ['mcp', 'add', 'x', '--startup-timeout', 'soon', '--', NODE, SDK],
    ['mcp', 'add', 'x', '--url', url, '--header', 'A: 1', '--header', 'B: 2'],
    ['mcp', 'add', 'x', '--url', url, '--header', 'no colon'],
    ['mcp', 'add', 'x', '--env', 'A=pre-${VAR}', '--', NODE, SDK],
    ['mcp', 'frobnicate'],
    ['frobnicate'],
    ['call', 'x', '--args', '[1]'],
    ['call', 'x', '--args', '{not json'],
    ['mcp', 'import', '--from', 'nowhere'],
    ['mcp', 'import'],
    ['tools', '--session'],
  ];
  for (const args of cases) {
    const r = await term(e, args);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2 (${r.screen.trim()})`);
    t.equal(r.screen.trim().split('\n').length, 1, `${args.join(' ')}: one line`);
    t.equal(errorCode(r.screen), 'ALBEDO_INVALID_ARGUMENT');
  }
  t.equal(ext(e.home), '', 'nothing was saved');
  const help = await term(e, ['mcp', 'add', '--help']);
  t.equal(help.code, 0, '--help is not an error');
});
