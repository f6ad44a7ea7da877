import t from 'tap';
import { albedoFor, newTag, server, fixture, EVERYTHING, rejection, taggedPids, until, NODE, ROOT } from '../helpers.ts';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const bad = fixture('bad-server.ts');

t.test('a 20 MiB line fails that connection with ALBEDO_FRAME_TOO_LARGE, nothing else', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const ok = await a.connect(server(tag, fixture('sdk1-server.ts')));
  const e = await rejection(a.connect(server(tag, bad, ['huge'])));
  t.equal(e.code, 'ALBEDO_FRAME_TOO_LARGE');
  t.match(e.message, /16 MiB/);
  t.equal((await ok.callTool('echo', { text: 'still here' })).content[0].text, 'still here', 'other connections are untouched');
});

t.test('garbage lines are skipped with warnings; a server of only garbage times out naming it', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['garbage']));
  t.equal(c.era, 'legacy');
  t.match(c.warnings.join('\n'), /ignored a line from the server \(not JSON\): "Server starting/);
  t.equal((await c.callTool('echo', { text: 'x' })).content[0].text, 'x', 'calls work between garbage lines');
  const e = await rejection(a.connect(server(tag, bad, ['garbage-only'], { startupTimeoutMs: 1_500 })));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  t.match(e.message, /not JSON-RPC/);
  t.match(e.message, /this is not json/);
});

t.test('a server that exits mid-call: unknown outcome with its stderr, next call dials again', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['exit-mid-call']));
  const dropped: string[] = [];
  c.on('dropped', (e) => dropped.push(e.code));
  const e = await rejection(c.callTool('echo', { text: 'boom' }));
  t.equal(e.code, 'ALBEDO_SERVER_EXITED');
  t.equal(e.outcome, 'unknown', 'never retried: the outcome is unknown');
  t.match(e.message, /code 7/);
  t.match(e.message, /fatal: the tool crashed the server/);
  t.same(dropped, ['ALBEDO_SERVER_EXITED']);
  const tools = await c.listTools();
  t.same(
    tools.map((x) => x.name),
    ['echo'],
    'the next request dialled the server again',
  );
});

t.test('a server that ignores stdin EOF and SIGTERM is killed on close', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['ignore-eof']));
  t.ok(taggedPids(tag).length >= 1, 'the server runs');
  await c.close();
  t.same(taggedPids(tag), [], 'close resolves only once the group is reaped');
});

t.test('a grandchild that ignores SIGTERM does not outlive its server', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['grandchild']));
  t.ok(taggedPids(tag).length >= 2, 'server and grandchild run');
  await c.close();
  t.same(taggedPids(tag), []);
});

t.test('spawn failures and bad config are refused with specific errors, nothing left running', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const missing = await rejection(a.connect({ command: '/nonexistent/albedo-server', env: { ALBEDO_TEST_TAG: tag } }));
  t.equal(missing.code, 'ALBEDO_SPAWN_FAILED');
  t.equal(missing.outcome, 'not_run');
  t.match(missing.message, /No such file/);
  const cwd = await rejection(a.connect(server(tag, bad, [], { cwd: '/nonexistent/dir' })));
  t.equal(cwd.code, 'ALBEDO_INVALID_CONFIG');
  t.match(cwd.message, /cwd/);
  const shape = await rejection(a.connect({ command: '', env: {} } as never));
  t.equal(shape.code, 'ALBEDO_INVALID_CONFIG');
  t.match(shape.message, /command/);
  const envName = await rejection(a.connect(server(tag, bad, [], { env: { SECRET: { env: 'ALBEDO_SURELY_UNSET_VAR' } } })));
  t.equal(envName.code, 'ALBEDO_INVALID_CONFIG');
  t.match(envName.message, /ALBEDO_SURELY_UNSET_VAR/);
  const exited = await rejection(
    a.connect({ command: NODE, args: ['-e', 'console.error("cannot read config file"); process.exit(2)'], env: { ALBEDO_TEST_TAG: tag } }),
  );
  t.equal(exited.code, 'ALBEDO_SERVER_EXITED');
  t.match(exited.message, /code 2/);
  t.match(exited.message, /cannot read config file/);
});

t.test('the server sees only HOME, PATH, TMPDIR and the named values', async (t) => {
  const tag = newTag();
  process.env.ALBEDO_TEST_SECRET_SOURCE = 's3cret';
  t.teardown(() => {
    delete process.env.ALBEDO_TEST_SECRET_SOURCE;
  });
  const a = await albedoFor(t, tag);
  const c = await a.connect(
    server(tag, EVERYTHING, ['stdio'], { env: { FROM_VAR: { env: 'ALBEDO_TEST_SECRET_SOURCE' }, LITERAL: 'yes' }, cwd: os.tmpdir() }),
  );
  const r = await c.callTool('get-env');
  const env = JSON.parse(String(r.content[0].text)) as Record<string, string>;
  const keys = Object.keys(env)
    .filter((k) => !['HOME', 'PATH', 'TMPDIR'].includes(k))
    .sort();
  t.same(keys, ['ALBEDO_TEST_TAG', 'FROM_VAR', 'LITERAL']);
  t.equal(env.FROM_VAR, 's3cret');
  t.equal(env.PATH, process.env.PATH);
});

t.test('a request that times out is dropped and the server is sent notifications/cancelled', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('sdk1-server.ts')));
  const e = await rejection(c.callTool('sleep', { ms: 20_000 }, { timeoutMs: 300 }));
  t.equal(e.code, 'ALBEDO_TIMEOUT');
  t.equal(e.outcome, 'unknown');
  let last = '';
  await until(() => false, 0).catch(() => {});
  for (let i = 0; i < 50 && last !== 'cancelled'; i++) {
    last = String((await c.callTool('last_sleep')).content[0].text);
    if (last !== 'cancelled') await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(last, 'cancelled', 'the server aborted the request on notifications/cancelled');
});

t.test('server requests: ping is answered, anything else is Method not found', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['server-requests']));
  let answers: Array<{ id: string; result?: unknown; error?: { code: number } }> = [];
  for (let i = 0; i < 50 && answers.length < 2; i++) {
    answers = JSON.parse(String((await c.callTool('echo')).content[0].text));
    if (answers.length < 2) await new Promise((r) => setTimeout(r, 50));
  }
  const byId = Object.fromEntries(answers.map((m) => [m.id, m]));
  t.same(byId.p1.result, {});
  t.equal(byId.r1.error?.code, -32601);
});

t.test('an input_required result is an error: Albedo declares no client capabilities', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['input-required']));
  t.equal(c.era, 'modern');
  const e = await rejection(c.callTool('echo', { text: 'x' }));
  t.equal(e.code, 'ALBEDO_INPUT_REQUIRED');
});

t.test('pagination is followed, and bounded at 100 pages', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('sdk1-paged-server.ts'), ['--tools', '250', '--page', '10']));
  t.equal(c.catalogue.tools.length, 250);
  t.equal(c.catalogue.tools[249].name, 't249');
  t.same(c.warnings, []);
  const endless = await a.connect(server(tag, fixture('sdk1-paged-server.ts'), ['--endless', '--page', '3']));
  t.equal(endless.catalogue.tools.length, 300, '100 pages of 3');
  t.match(endless.warnings.join('\n'), /stopped after 100 pages/);
});

t.test('list_changed rediscovers in the background (legacy and modern listen)', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  for (const [script, args] of [
    [fixture('sdk1-server.ts'), []],
    [fixture('sdk-server.ts'), ['--legacy', 'reject']],
  ] as const) {
    const c = await a.connect(server(tag, script, [...args]));
    const seen: string[][] = [];
    c.on('catalogue', (cat) => seen.push(cat.tools.map((x) => x.name)));
    await c.callTool('add_tool');
    await until(() => seen.length > 0, 10_000, `a new catalogue from ${c.era}`);
    t.ok(seen.at(-1)!.includes('late_tool'), `${c.era}: the new tool appears`);
    t.ok(c.catalogue.tools.some((x) => x.name === 'late_tool'));
  }
});

t.test('the server runs under the launcher this build selected', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  await a.connect(server(tag, fixture('sdk1-server.ts')));
  const [pid] = taggedPids(tag);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  const parent = readFileSync(`/proc/${ppid}/cmdline`, 'utf8');
  const expected =
    process.env.ALBEDO_LAUNCHER === 'python' || !existsSync(path.join(ROOT, 'build', 'albedo-launcher'))
      ? 'launcher.py'
      : 'albedo-launcher';
  t.ok(parent.includes(expected), `parent ${JSON.stringify(parent.replace(/\0/g, ' '))} is ${expected}`);
});

t.test('a server that ends its listen with notifications/cancelled is not listened to again', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['listen-cancel']));
  t.equal(c.era, 'modern');
  await new Promise((r) => setTimeout(r, 1_500));
  t.equal((await c.callTool('echo', { text: 'x' })).content[0].text, '1', 'one listen, not held again');
});

t.test('ping: legacy sends ping; modern (2026-07-28 has no ping) asks server/discover', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const modern = await a.connect(server(tag, fixture('sdk-server.ts')));
  t.same(await modern.ping(), {});
  const legacy = await a.connect(server(tag, fixture('sdk1-server.ts')));
  t.same(await legacy.ping(), {});
});

t.test('after a redial, one subscriptions/listen is held however many calls waited for the dial', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, bad, ['listen-count']));
  const text = async (arg: string): Promise<string> => String((await c.callTool('echo', { text: arg })).content[0]!.text);
  t.equal(await text('count'), '1', 'the first process got one listen');
  t.equal((await rejection(c.callTool('echo', { text: 'exit' }))).code, 'ALBEDO_SERVER_EXITED');
  const counts = await Promise.all(Array.from({ length: 10 }, () => text('count')));
  t.same(counts, Array(10).fill('1'), 'ten calls at once shared one redial and one listen');
  t.equal(await text('count'), '1', 'and no listen came later');
});
