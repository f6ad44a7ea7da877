// What the ACP routes refuse before anything is made or changed, over real HTTP against a real daemon: an mcpServers
// entry (or its env/header pair) with a key ACP v1 does not give it (400 at that key; `_meta` and every key of the
// pinned schema stay accepted), and a workspace (`cwd`) at or inside the daemon's home, however it is spelled (a
// subdirectory, a symlink, `..`, a symlink retargeted after the session was opened): 400 at body.cwd, for
// POST /v1/acp/sessions, POST /v1/acp/attach and PUT …/overlay. Each editor server is the SDK's, started with a preload
// that appends its cwd to a log outside the home, so a server that started at all is seen.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(240_000);

const AGENT = { command: '/usr/bin/env', args: ['agent', '--acp'] };
const PRELOAD = 'data:text/javascript,import fs from "node:fs"; fs.appendFileSync(process.env.START_LOG, process.cwd() + "\\n");';

/** The SDK's server, as an editor sends it; each start appends its cwd to `log`. */
const server = (tag: string, log: string, name = 'ed') => ({
  name,
  command: NODE,
  args: ['--import', PRELOAD, fixture('sdk-server.ts')],
  env: [
    { name: 'ALBEDO_TEST_TAG', value: tag },
    { name: 'START_LOG', value: log },
  ],
});

/** Every file under `dir` with a digest of its bytes (symlinks by their target). */
function snapshot(dir: string, out: Record<string, string> = {}): Record<string, string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) snapshot(p, out);
    else out[p] = e.isFile() ? createHash('sha256').update(readFileSync(p)).digest('hex') : e.isSymbolicLink() ? 'link' : 'other';
  }
  return out;
}

const starts = (log: string): string[] => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
const sessions = async (d: Daemon): Promise<string[]> => (await d.call('GET', '/v1/acp/sessions')).body.sessions.map((s: any) => s.id);

async function daemon(t: Test) {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const log = path.join(tempDir(t, 'acp-starts-'), 'starts.log');
  return { d, tag, home, log };
}

t.test('an mcpServers entry with a key ACP v1 does not give it is refused at that key; nothing changes', async (t) => {
  const { d, tag, home, log } = await daemon(t);
  const cwd = tempDir(t, 'acp-cwd-');
  const ok = server(tag, log);
  const bad: Array<[string, Record<string, unknown>, Array<string | number>]> = [
    ['stdio shell', { ...ok, shell: true }, ['shell']],
    ['stdio evil', { ...ok, evil: 1 }, ['evil']],
    ['env pair', { ...ok, env: [...ok.env, { name: 'X', value: 'y', extra: 1 }] }, ['env', 2, 'extra']],
    ['http', { type: 'http', name: 'h', url: 'http://127.0.0.1:1/mcp', headers: [], evil: 1 }, ['evil']],
    [
      'sse header',
      { type: 'sse', name: 's', url: 'http://127.0.0.1:1/sse', headers: [{ name: 'a', value: 'b', x: 1 }] },
      ['headers', 0, 'x'],
    ],
  ];
  const before = snapshot(home);
  for (const [what, entry, at] of bad) {
    for (const [method, p, body] of [
      ['POST', '/v1/acp/sessions', { cwd, mcpServers: [entry], agent: AGENT }],
      ['POST', '/v1/acp/attach', { acpSessionId: `agent-${what}`, cwd, mcpServers: [entry], agent: AGENT }],
    ] as const) {
      const r = await d.call(method, p, { body });
      t.match(r, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT' } } }, `${what}: ${p}`);
      t.same(r.body.error?.path, ['body', 'mcpServers', 0, ...at], `${what}: ${p}: the path names the key`);
    }
  }
  t.same(await sessions(d), [], 'no session made');
  t.same(starts(log), [], 'no server started');
  t.same(snapshot(home), before, 'the home unchanged');

  // Every key the pinned schema gives a stdio entry (and `_meta` on its pairs) is taken.
  const full = { ...ok, type: 'stdio', _meta: { editor: 'x' }, env: ok.env.map((e) => ({ ...e, _meta: null })) };
  const made = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [full], agent: AGENT } });
  t.equal(made.status, 201, `made: ${made.body.error?.code ?? 'ok'}`);
  t.same(starts(log), [cwd], 'its server started, in the workspace');
  const tok = { 'albedo-attachment-token': made.body.token };
  const before2 = snapshot(home);
  const put = await d.call('PUT', `/v1/acp/sessions/${made.body.id}/overlay`, {
    body: { mcpServers: [{ ...server(tag, log, 'ed2'), shell: true }] },
    headers: tok,
  });
  t.match(put, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'mcpServers', 0, 'shell'] } } });
  t.same(starts(log), [cwd], 'PUT …/overlay: no server started');
  t.same(snapshot(home), before2, 'PUT …/overlay: the home unchanged');
  t.same((await d.call('GET', `/v1/acp/sessions/${made.body.id}`)).body.overlay.servers, [{ name: 'ed', state: 'ready' }]);

  // An http and an sse entry with every key of theirs pass the schema: refused as overlays (unsupported), not as input.
  for (const type of ['http', 'sse']) {
    const entry = { type, name: type, url: 'http://127.0.0.1:1/mcp', headers: [{ name: 'a', value: 'b', _meta: {} }], _meta: {} };
    const r = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [entry], agent: AGENT } });
    t.match(r, { status: 409, body: { error: { code: 'ALBEDO_OVERLAY_FAILED', data: { reason: 'unsupported' } } } }, type);
  }
});

t.test('a workspace at or inside the daemon home is refused at body.cwd; its parent is not', async (t) => {
  const { d, tag, home, log } = await daemon(t);
  mkdirSync(path.join(home, 'sub'));
  const links = tempDir(t, 'acp-links-');
  symlinkSync(home, path.join(links, 'home'));
  symlinkSync(path.join(home, 'sub'), path.join(links, 'sub'));
  const sibling = tempDir(t, 'acp-sibling-');
  const inside = [
    ['the home', home],
    ['a subdirectory', path.join(home, 'sub')],
    ['a subdirectory not made yet', path.join(home, 'sub', 'new')],
    ['a symlink to the home', path.join(links, 'home')],
    ['a symlink into the home', path.join(links, 'sub')],
    ['.. into the home', `${sibling}/../${path.basename(home)}/sub`],
    ['the home with a trailing slash', `${home}/`],
  ];
  const before = snapshot(home);
  for (const [what, cwd] of inside) {
    const mcpServers = [server(tag, log)];
    for (const [p, body] of [
      ['/v1/acp/sessions', { cwd, mcpServers, agent: AGENT }],
      ['/v1/acp/attach', { acpSessionId: `agent-${what}`, cwd, mcpServers, agent: AGENT }],
    ] as const) {
      const r = await d.call('POST', p, { body });
      t.match(r, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'] } } }, `${what}: ${p}`);
    }
  }
  t.same(await sessions(d), [], 'no session made');
  t.same(starts(log), [], 'no server started');
  t.same(snapshot(home), before, 'the home unchanged');

  // A session opened in a workspace reached through a symlink, which then comes to point into the home.
  const work = tempDir(t, 'acp-work-');
  const moving = path.join(links, 'moving');
  symlinkSync(work, moving);
  const made = await d.call('POST', '/v1/acp/sessions', { body: { cwd: moving, mcpServers: [server(tag, log)], agent: AGENT } });
  t.equal(made.status, 201, `made: ${made.body.error?.code ?? 'ok'}`);
  const { id, token } = made.body;
  const tok = { 'albedo-attachment-token': token };
  t.equal((await d.call('PATCH', `/v1/acp/sessions/${id}`, { body: { acpSessionId: 'agent-moving' }, headers: tok })).status, 204);
  t.equal(starts(log).length, 1, 'its server started');
  rmSync(moving);
  symlinkSync(home, moving);
  const before2 = snapshot(home);
  for (const body of [{ cwd: moving, mcpServers: [server(tag, log, 'ed2')] }, { mcpServers: [server(tag, log, 'ed2')] }]) {
    const r = await d.call('PUT', `/v1/acp/sessions/${id}/overlay`, { body, headers: tok });
    t.match(
      r,
      { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'] } } },
      `PUT …/overlay ${body.cwd ?? ''}`,
    );
  }
  t.equal((await d.call('DELETE', `/v1/acp/sessions/${id}/attachment`, { headers: tok })).status, 204, 'released');
  const again = await d.call('POST', '/v1/acp/attach', {
    body: { acpSessionId: 'agent-moving', cwd: moving, mcpServers: [server(tag, log, 'ed2')], agent: AGENT },
  });
  t.match(again, { status: 400, body: { error: { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'cwd'] } } }, 'attach');
  t.equal(starts(log).length, 1, 'no other server started');
  t.same(snapshot(home), before2, 'the home unchanged');
  t.same(
    (await d.call('GET', `/v1/acp/sessions/${id}`)).body.overlay.servers.map((s: any) => s.name),
    ['ed'],
    'the overlay unchanged',
  );

  // The home's parent holds the home: an editor opening it is served.
  const parent = path.dirname(home);
  const ok = await d.call('POST', '/v1/acp/sessions', { body: { cwd: parent, mcpServers: [server(tag, log)], agent: AGENT } });
  t.equal(ok.status, 201, `made: ${ok.body.error?.code ?? 'ok'}`);
  t.equal(starts(log).at(-1), parent, 'its server runs in the parent');
});
