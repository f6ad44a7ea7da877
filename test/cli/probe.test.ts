import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import net from 'node:net';
import pty from 'node-pty';
import { ROOT, NODE, fixture, EVERYTHING, newTag, taggedPids, waitNoLeftovers, until, httpFixture } from '../helpers.ts';

const BIN = path.join(ROOT, 'bin', 'albedo.ts');

function probe(args: string[], tag = newTag()): { code: number | null; stdout: string; stderr: string; tag: string } {
  const r = spawnSync(NODE, [BIN, 'probe', ...args.map((a) => a.replace('@TAG', tag))], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, tag };
}
const tagged = (tag: string): string[] => ['--env', `ALBEDO_TEST_TAG=${tag}`];

t.test('probe --json reports era and version for each real server', async (t) => {
  const cases: Array<[string, string[], string, string]> = [
    ['SDK 2.x dual-era', [fixture('sdk-server.ts')], 'modern', '2026-07-28'],
    ['SDK 2.x modern-only', [fixture('sdk-server.ts'), '--legacy', 'reject'], 'modern', '2026-07-28'],
    ['SDK 1.x', [fixture('sdk1-server.ts')], 'legacy', '2025-11-25'],
    ['server-everything', [EVERYTHING, 'stdio'], 'legacy', '2025-11-25'],
    ['silent legacy', [fixture('bad-server.ts'), 'silent-legacy'], 'legacy', '2025-06-18'],
  ];
  for (const [name, cmd, era, version] of cases) {
    const tag = newTag();
    const r = probe(['--json', ...tagged(tag), '--', NODE, ...cmd], tag);
    t.equal(r.code, 0, `${name}: exit 0 ${r.stderr}`);
    const out = JSON.parse(r.stdout);
    t.equal(out.era, era, `${name}: era`);
    t.equal(out.protocolVersion, version, `${name}: version`);
    for (const k of ['serverInfo', 'capabilities', 'instructions', 'tools', 'resources', 'resourceTemplates', 'prompts'])
      t.ok(k in out, `${name}: has ${k}`);
    t.same(taggedPids(tag), [], `${name}: the child was reaped before exit`);
  }
});

t.test('probe lists server-everything completely and --call/--read/--prompt return results', async (t) => {
  const tag = newTag();
  const r = probe(['--json', ...tagged(tag), '--call', 'get-sum', '--args', '{"a":20,"b":22}', '--', NODE, EVERYTHING, 'stdio'], tag);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.ok(out.tools.length >= 10 && out.resources.length > 0 && out.prompts.length > 0 && out.resourceTemplates.length > 0);
  t.match(JSON.stringify(out.result.content), /42/);
  const read = JSON.parse(probe(['--json', '--read', 'fixture://readme', '--', NODE, fixture('sdk-server.ts')]).stdout);
  t.equal(read.result.contents[0].text, 'hello from the fixture');
  const prompt = JSON.parse(
    probe(['--json', '--prompt', 'greet', '--args', '{"name":"Ada"}', '--', NODE, fixture('sdk-server.ts')]).stdout,
  );
  t.equal(prompt.result.messages[0].content.text, 'Hello, Ada!');
  const human = probe(['--', NODE, fixture('sdk1-server.ts')]);
  t.equal(human.code, 0);
  t.match(human.stdout, /era\s+legacy \(2025-11-25\)/);
  t.match(human.stdout, /tools \(\d+\)\n\s+echo/);
  const isError = probe(['--call', 'fail', '--', NODE, fixture('sdk-server.ts')]);
  t.equal(isError.code, 3, 'a tool that reports an error exits 3');
});

t.test('probe failures: one clear line on stderr, non-zero exit', async (t) => {
  const spawnFail = probe(['--', '/nonexistent/server']);
  t.equal(spawnFail.code, 1);
  t.match(spawnFail.stderr, /^albedo probe: ALBEDO_SPAWN_FAILED: cannot start "\/nonexistent\/server": No such file or directory\n$/);
  const exited = probe(['--', NODE, '-e', 'console.error("missing API key"); process.exit(4)']);
  t.equal(exited.code, 1);
  t.match(exited.stderr, /ALBEDO_SERVER_EXITED: the server exited with code 4; its stderr ends: \| missing API key/);
  t.equal(exited.stderr.trim().split('\n').length, 1, 'one line');
  const timeout = probe(['--timeout', '1500', '--', NODE, '-e', 'setInterval(()=>{},1000)']);
  t.equal(timeout.code, 1);
  t.match(timeout.stderr, /ALBEDO_TIMEOUT/);
  const refused = probe(['--', NODE, fixture('bad-server.ts'), 'refuse-era']);
  t.match(refused.stderr, /ALBEDO_ERA_REFUSED: .*2099-01-01.*2026-07-28/);
  const huge = probe(['--', NODE, fixture('bad-server.ts'), 'huge']);
  t.match(huge.stderr, /ALBEDO_FRAME_TOO_LARGE/);
  for (const [args, re] of [
    [[], /no server: give --url URL, or a command after --/],
    [['--timeout', 'soon', '--', 'x'], /--timeout must be/],
    [['--call', 'a', '--read', 'b', '--', 'x'], /at most one/],
    [['--args', '{', '--call', 'a', '--', 'x'], /--args is not valid JSON/],
    [['--bogus', '--', 'x'], /Unknown option/],
  ] as Array<[string[], RegExp]>) {
    const r = probe(args);
    t.equal(r.code, 2, `usage error ${args.join(' ')}`);
    t.match(r.stderr, re);
  }
});

t.test('kill -9 of the probe leaves no process behind', async (t) => {
  const tag = newTag();
  const child = spawn(
    NODE,
    [BIN, 'probe', ...tagged(tag), '--call', 'sleep', '--args', '{"ms":60000}', '--', NODE, fixture('bad-server.ts'), 'grandchild'],
    { stdio: 'ignore' },
  );
  await until(() => taggedPids(tag).length >= 2, 20_000, 'server and grandchild to start');
  await new Promise((r) => setTimeout(r, 300));
  child.kill('SIGKILL');
  const left = await waitNoLeftovers(tag, 15_000);
  t.same(left, [], 'the launcher reaped the server and its grandchild after the daemon died');
});

t.test('Ctrl-C in a real terminal stops the probe and reaps the server', async (t) => {
  const tag = newTag();
  const term = pty.spawn(
    NODE,
    [BIN, 'probe', ...tagged(tag), '--call', 'sleep', '--args', '{"ms":60000}', '--', NODE, fixture('sdk1-server.ts')],
    { cols: 120, rows: 30, cwd: ROOT, env: process.env as Record<string, string> },
  );
  let screen = '';
  term.onData((d) => {
    screen += d;
  });
  const exit = new Promise<number>((resolve) => term.onExit((e) => resolve(e.exitCode)));
  await until(() => taggedPids(tag).length >= 1, 20_000, 'server to start');
  await new Promise((r) => setTimeout(r, 1_500));
  term.write('\x03');
  t.equal(await exit, 130, 'exit status 130 after SIGINT');
  t.match(screen, /interrupted by SIGINT/);
  t.same(await waitNoLeftovers(tag, 10_000), []);
});

t.test('probe --json --url reports era, version and catalogue for each real HTTP server, and --call works', async (t) => {
  const tag = newTag();
  const servers: Array<[string, string, string, string, string]> = [];
  for (const [name, script, args, era, version] of [
    ['SDK 2.x dual-era', 'sdk-http-server.ts', ['--mode', 'dual'], 'modern', '2026-07-28'],
    ['SDK 2.x modern-only', 'sdk-http-server.ts', ['--mode', 'modern'], 'modern', '2026-07-28'],
    ['SDK 2.x sessionful', 'sdk-http-server.ts', ['--mode', 'sessionful'], 'legacy', '2025-11-25'],
    ['SDK 1.x', 'sdk1-http-server.ts', [], 'legacy', '2025-11-25'],
  ] as const) {
    const srv = await httpFixture(t, tag, fixture(script), [...args]);
    servers.push([name, srv.url, era, version, 'echo']);
  }
  const everything = await everythingOverHttp(t, tag);
  servers.push(['server-everything', everything, 'legacy', '2025-11-25', 'echo']);
  for (const [name, url, era, version, tool] of servers) {
    const r = await probeAsync(['--json', '--url', url, '--call', tool, '--args', '{"message":"hi","text":"hi"}']);
    t.equal(r.code, 0, `${name}: exit 0 ${r.stderr}`);
    const out = JSON.parse(r.stdout);
    t.equal(out.era, era, `${name}: era`);
    t.equal(out.protocolVersion, version, `${name}: version`);
    t.ok(out.tools.length > 0 && out.resources.length > 0 && out.prompts.length > 0, `${name}: catalogue`);
    t.match(JSON.stringify(out.result.content), /hi/, `${name}: --call`);
  }
  const bad = await probeAsync(['--url', 'http://u:p@127.0.0.1:1/mcp']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /ALBEDO_INVALID_CONFIG: .*user name or password/);
  const both = await probeAsync(['--url', 'http://127.0.0.1:1/mcp', '--', NODE]);
  t.equal(both.code, 2);
  t.match(both.stderr, /either --url or a command/);
  const header = await probeAsync(['--header', 'X: y', '--', NODE, fixture('sdk-server.ts')]);
  t.equal(header.code, 2);
  t.match(header.stderr, /--header and --bearer-env go with --url/);
});

function probeAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [BIN, 'probe', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** server-everything's own streamableHttp transport on a free loopback port. */
async function everythingOverHttp(t: { teardown(fn: () => unknown): void }, tag: string): Promise<string> {
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn(NODE, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port), ALBEDO_TEST_TAG: `${tag}-server` },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  await until(() => /listening on port/.test(err), 15_000, 'server-everything to listen');
  return `http://127.0.0.1:${port}/mcp`;
}
