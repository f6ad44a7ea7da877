// `albedo gateway add|list|remove|token` against a real daemon (issue 22):
// --json shapes and exit codes; a token printed once, alone on stdout, with
// how to use it on stderr, and never again (list); revoking one and all;
// bad input refused (exit 2) with extensions.json byte for byte as it was;
// the subcommands' options are theirs (`add g --server s`), never the bare
// form's (`albedo gateway NAME | --server NAME`, the stdio server).
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { errorCode, piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

t.test('albedo gateway: add, list, token, remove', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const file = path.join(e.home, 'extensions.json');
  writeFileSync(file, JSON.stringify({ mcp: { servers: { filesystem: { command: '/bin/true' } } }, other: { kept: true } }, null, 2));
  await startDaemon(t, e.home, { tag: e.tag });
  const ext = (): Buffer => readFileSync(file);
  const run = (...args: string[]) => piped(e, ['gateway', ...args]);

  const empty = await run('list', '--json');
  t.same([empty.code, JSON.parse(empty.stdout)], [0, []]);

  const claude = await run(
    ...['add', 'claude', '--exclude', 'x,y', '--profile', 'anthropic', '--tools', 'auto', '--context-budget', '200000', '--json'],
  );
  t.equal(claude.code, 0, claude.stderr);
  const c = JSON.parse(claude.stdout);
  t.match(c, { name: 'claude', kind: 'composed', definition: { servers: { exclude: ['x', 'y'] }, profile: 'anthropic', tools: 'auto' } });
  t.equal(c.problems.length, 2, 'x and y are not configured: problems, saved all the same');
  const fs = await run('add', 'fs', '--server', 'filesystem', '--json');
  t.equal(fs.code, 0, fs.stderr);
  t.match(JSON.parse(fs.stdout), { name: 'fs', kind: 'pass-through', definition: { server: 'filesystem' }, problems: [] });
  const doc = JSON.parse(ext().toString());
  t.same(doc.gateways, {
    claude: { servers: { exclude: ['x', 'y'] }, profile: 'anthropic', tools: 'auto', contextBudget: 200000 },
    fs: { server: 'filesystem' },
  });
  t.same(doc.other, { kept: true }, 'another section kept');

  const human = await run('list');
  t.equal(human.code, 0);
  t.match(human.stdout, /^claude\s+composed\s+every enabled server but x, y\s+0\s+0\s+no server "x"/m);
  t.match(human.stdout, /^fs\s+pass-through\s+server filesystem\s+0\s+0\s+—/m);

  t.test('bad input: exit 2, the file byte for byte as it was', async (t) => {
    const before = ext();
    const bad: Array<[string, string[], number, string]> = [
      ['a reserved name', ['add', 'list'], 2, 'ALBEDO_INVALID_ARGUMENT'],
      ['a bad name', ['add', 'a.b'], 2, 'ALBEDO_INVALID_ARGUMENT'],
      ['a pass-through that composes', ['add', 'p', '--server', 'filesystem', '--tools', 'all'], 2, 'ALBEDO_INVALID_ARGUMENT'],
      ['a bad mode', ['add', 'p', '--tools', 'some'], 2, 'ALBEDO_INVALID_ARGUMENT'],
      ['a budget not a number', ['add', 'p', '--context-budget', 'lots'], 2, 'ALBEDO_INVALID_ARGUMENT'],
      ['an existing name without --replace', ['add', 'fs', '--server', 'filesystem'], 1, 'ALBEDO_PRECONDITION_FAILED'],
      ['a token for no gateway', ['token', 'nope'], 4, 'ALBEDO_NOT_FOUND'],
      ['removing no gateway', ['remove', 'nope'], 4, 'ALBEDO_NOT_FOUND'],
      ['both revoke forms', ['token', 'fs', '--revoke', 'ab', '--revoke-all'], 2, 'ALBEDO_INVALID_ARGUMENT'],
    ];
    for (const [what, args, code, err] of bad) {
      const r = await run(...args);
      t.same([r.code, errorCode(r.stderr)], [code, err], `${what}: ${r.stderr.trim()}`);
      t.same(ext(), before, `${what}: the file as it was`);
    }
    const replaced = await run('add', 'fs', '--server', 'filesystem', '--result-budget', '5000', '--replace', '--json');
    t.equal(replaced.code, 0, '--replace replaces');
    t.same(JSON.parse(ext().toString()).gateways.fs, { server: 'filesystem', resultBudget: 5000 });
  });

  t.test('token: printed once, alone on stdout; revoked one and all', async (t) => {
    const minted = await run('token', 'fs');
    t.equal(minted.code, 0, minted.stderr);
    t.match(minted.stdout, /^albgw_[A-Za-z0-9_-]{43}\n$/, 'the token alone on stdout');
    const token = minted.stdout.trim();
    t.match(minted.stderr, /shown once/);
    t.match(minted.stderr, /Authorization: Bearer/);
    t.match(minted.stderr, /\/mcp\/gateways\/fs/);
    t.notOk(minted.stderr.includes(token), 'not on stderr');
    const list = await run('list', '--json');
    const fsRow = JSON.parse(list.stdout).find((g: any) => g.name === 'fs');
    t.equal(fsRow.tokens.length, 1);
    t.notOk(list.stdout.includes(token), 'never shown again');
    t.notOk(readFileSync(path.join(e.home, 'gateway-tokens.json'), 'utf8').includes(token), 'not in the file');

    const j = await run('token', 'fs', '--json');
    const second = JSON.parse(j.stdout);
    t.match(second, { id: String, token: /^albgw_/, created: Number });
    const revoked = await run('token', 'fs', '--revoke', fsRow.tokens[0].id, '--json');
    t.same([revoked.code, JSON.parse(revoked.stdout)], [0, { revoked: 1 }]);
    const again = await run('token', 'fs', '--revoke', fsRow.tokens[0].id);
    t.same([again.code, errorCode(again.stderr)], [4, 'ALBEDO_NOT_FOUND'], 'an id revoked already');
    await run('token', 'fs');
    const all = await run('token', 'fs', '--revoke-all', '--json');
    t.same([all.code, JSON.parse(all.stdout)], [0, { revoked: 2 }]);
  });

  t.test('remove', async (t) => {
    const r = await run('remove', 'claude', '--json');
    t.same([r.code, JSON.parse(r.stdout)], [0, { removed: 'claude' }]);
    t.notOk(Object.hasOwn(JSON.parse(ext().toString()).gateways, 'claude'));
  });

  t.test('the bare form: no name is bad usage, and so is anything but NAME or --server NAME', async (t) => {
    const none = await run();
    t.equal(none.code, 2);
    t.match(none.stderr, /albedo gateway \[NAME \| --server NAME \| --session ID\]/);
    for (const words of [['fs', '--server', 'filesystem'], ['--server'], ['--bogus'], ['a', 'b'], ['--session'], ['--session', 'a', 'b']]) {
      const r = await run(...words);
      t.same([r.code, errorCode(r.stderr)], [2, 'ALBEDO_INVALID_ARGUMENT'], words.join(' '));
    }
  });
  t.ok(existsSync(file));
});
