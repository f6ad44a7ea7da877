// `albedo mcp import` of the files Claude Code, Gemini CLI and Codex write
// today with their own `mcp add` (test/fixtures/import/README.md says which
// version and command wrote each): what became of each entry — its
// transport, URL, command and arguments, where it runs, which values are
// stored as typed secrets and which are named variables, and why one is
// skipped. And a `type` is honoured in every format that has one: `http` and
// `streamable-http` are Streamable HTTP, `sse` the legacy transport
// (skipped), `stdio` a command (Gemini CLI's `mcp add -t http` writes
// `"type": "http"` beside `url`, which was taken for SSE).
import t from 'tap';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fixture, httpFixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

const byName = (out: any): Record<string, any> => Object.fromEntries(out.servers.map((s: any) => [s.name, s]));
const captured = (name: string): string => readFileSync(fixture(path.join('import', name)), 'utf8');
const put = (file: string, text: string): string => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
};
const FS_ARGS = ['-y', '@modelcontextprotocol/server-filesystem', '/srv/docs'];
const SSE = { outcome: 'skipped', type: null, entry: null, secrets: [], reason: 'unsupported_transport' };

/** The plan `--json` shows (exit 0, or the test fails with its stderr). */
async function preview(e: CliEnv, from: string, file?: string): Promise<any> {
  const r = await piped(e, ['mcp', 'import', '--from', from, ...(file ? [file] : []), '--json']);
  if (r.code !== 0) throw new Error(`import --from ${from} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

t.test("Claude Code 2.1.197: a project's .mcp.json and ~/.claude.json (user and local scopes)", async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const project = realpathSync(tempDir(t, 'albedo-import-claude-code-'));
  put(path.join(project, '.mcp.json'), captured('claude-code-2.1.197-mcp.json'));

  const out = await preview({ ...e, cwd: project }, 'claude-code');
  t.equal(out.file, path.join(project, '.mcp.json'), "the project's file by default");
  const p = byName(out);
  t.same(Object.keys(p), ['files-project', 'api-project', 'events-project']);
  t.match(p['files-project'], {
    outcome: 'would_add',
    type: 'stdio',
    entry: { command: 'npx', args: FS_ARGS, env: { LOG_LEVEL: { env: 'LOG_LEVEL' } }, cwd: project },
    secrets: ['env API_KEY'],
    warnings: [],
  });
  t.same(p['api-project'].entry, { url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'API_TOKEN' }, 'the bearer names API_TOKEN');
  t.match(p['api-project'], { outcome: 'would_add', type: 'http', secrets: ['header X-Team'] }, 'a literal header is a typed secret');
  t.match(p['events-project'], SSE);
  t.notOk(JSON.stringify(out).includes('sk-literal-project-key'), 'no secret value shown');

  // ~/.claude.json: its own servers are user-wide; those of projects[<the current directory>] are that project's.
  const home = put(
    path.join(e.home, 'in', '.claude.json'),
    captured('claude-code-2.1.197-claude.json').replaceAll('"/tmp/hosts/proj-claude"', JSON.stringify(project)),
  );
  const u = byName(await preview({ ...e, cwd: project }, 'claude-code', home));
  t.same(Object.keys(u), ['files-user', 'api-user', 'events-user', 'files-local', 'api-local', 'events-local']);
  t.match(u['files-user'], { outcome: 'would_add', type: 'stdio', entry: { command: 'npx', args: FS_ARGS }, secrets: ['env API_KEY'] });
  t.notOk('cwd' in u['files-user'].entry, 'a user-wide server runs in an empty directory of its own');
  t.match(u['files-local'], { outcome: 'would_add', type: 'stdio', entry: { cwd: project, env: { LOG_LEVEL: { env: 'LOG_LEVEL' } } } });
  for (const n of ['api-user', 'api-local']) {
    t.match(u[n], { outcome: 'would_add', type: 'http', entry: { url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'API_TOKEN' } });
  }
  t.match(u['events-user'], SSE);
  t.match(u['events-local'], SSE);
});

t.test('Gemini CLI 0.61.0: "type": "http" beside url is Streamable HTTP, "type": "sse" is skipped; the server is tried', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag, env: { API_TOKEN: 'tok-gemini' } });
  const project = realpathSync(tempDir(t, 'albedo-import-gemini-'));
  put(path.join(project, '.gemini', 'settings.json'), captured('gemini-cli-0.61.0-project-settings.json'));

  const out = await preview({ ...e, cwd: project }, 'gemini');
  t.equal(out.file, path.join(project, '.gemini', 'settings.json'), "the project's file by default");
  const p = byName(out);
  t.same(Object.keys(p), ['files-project', 'api-project', 'events-project']);
  t.match(p['files-project'], {
    outcome: 'would_add',
    type: 'stdio',
    entry: { command: 'npx', args: FS_ARGS, env: { LOG_LEVEL: { env: 'LOG_LEVEL' } }, cwd: project, callTimeoutMs: 5000 },
    secrets: ['env API_KEY'],
  });
  t.match(p['api-project'], {
    outcome: 'would_add',
    type: 'http',
    entry: { url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'API_TOKEN' },
    secrets: ['header X-Team'],
    warnings: [],
  });
  t.match(p['events-project'], SSE);

  const userFile = fixture('import/gemini-cli-0.61.0-user-settings.json');
  const u = byName(await preview(e, 'gemini', userFile));
  t.match(u['files-user'], { outcome: 'would_add', type: 'stdio', secrets: ['env API_KEY'] });
  t.notOk('cwd' in u['files-user'].entry, 'a user-wide server runs in an empty directory of its own');
  t.match(u['api-user'], {
    outcome: 'would_add',
    type: 'http',
    entry: { url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'API_TOKEN' },
  });
  t.match(u['events-user'], SSE);

  // The http entry as Gemini CLI wrote it, pointed at a real Streamable HTTP server that wants the daemon's API_TOKEN.
  const web = await httpFixture(t, e.tag, fixture('sdk-http-server.ts'), ['--bearer', 'tok-gemini']);
  const api = JSON.parse(readFileSync(userFile, 'utf8')).mcpServers['api-user'];
  const one = put(path.join(e.home, 'in', 'settings.json'), JSON.stringify({ mcpServers: { 'api-user': { ...api, url: web.url } } }));
  const r = await piped(e, ['mcp', 'import', '--from', 'gemini', one, '--yes', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(byName(JSON.parse(r.stdout))['api-user'], { outcome: 'added', type: 'http', check: { tried: true, result: 'connected' } });
  const saved = (await d.call('GET', '/v1/mcp/servers')).body.servers;
  t.match(
    saved,
    [{ name: 'api-user', config: { url: web.url, bearerTokenEnvVar: 'API_TOKEN' }, secrets: { header: 'X-Team' } }],
    'saved as Streamable HTTP with its header secret',
  );
});

t.test('Codex 0.171.0: $CODEX_HOME/config.toml as codex mcp add writes it', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const codexHome = path.join(e.home, 'codex');
  put(path.join(codexHome, 'config.toml'), captured('codex-0.171.0-config.toml'));
  const out = await preview({ ...e, env: { CODEX_HOME: codexHome }, cwd: tempDir(t, 'albedo-import-codex-') }, 'codex');
  t.equal(out.file, path.join(codexHome, 'config.toml'), '$CODEX_HOME/config.toml by default');
  const p = byName(out);
  t.same(Object.keys(p), ['files', 'api', 'plain']);
  t.match(p.files, { outcome: 'would_add', type: 'stdio', entry: { command: 'npx', args: FS_ARGS } });
  t.same(p.files.secrets.sort(), ['env API_KEY', 'env LOG_LEVEL'], 'literal env values are typed secrets');
  t.notOk('cwd' in p.files.entry || 'env' in p.files.entry, 'no cwd (user-wide), no value in the entry');
  t.same(p.api.entry, { url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'API_TOKEN' });
  t.match(p.api, { outcome: 'would_add', type: 'http', secrets: [] });
  t.same(p.plain.entry, { url: 'https://other.example.com/mcp' });
  t.notOk(JSON.stringify(out).includes('sk-literal-codex-key'), 'no secret value shown');
});

/** One of each `type`, and entries without one. */
const TYPED: Record<string, Record<string, unknown>> = {
  http: { type: 'http', url: 'https://a.example.com/mcp' },
  streamable: { type: 'streamable-http', url: 'https://b.example.com/mcp' },
  sse: { type: 'sse', url: 'https://c.example.com/sse' },
  stdio: { type: 'stdio', command: 'npx', args: ['-y', 'd-mcp'] },
  'stdio-with-url': { type: 'stdio', command: 'npx', args: ['-y', 'e-mcp'], url: 'https://e.example.com/mcp' },
  ws: { type: 'ws', url: 'wss://f.example.com/mcp' },
  'not-a-string': { type: 1, url: 'https://g.example.com/mcp' },
  'bare-url': { url: 'https://h.example.com/mcp' },
  'bare-command': { command: 'npx', args: ['-y', 'i-mcp'] },
};

t.test('a type is honoured in every format that has one; Codex has none', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  for (const from of ['claude', 'claude-code', 'vscode', 'cursor', 'gemini']) {
    const file = put(
      path.join(e.home, 'in', `${from}.json`),
      JSON.stringify(from === 'vscode' ? { servers: TYPED } : { mcpServers: TYPED }),
    );
    const p = byName(await preview(e, from, file));
    t.match(p.http, { outcome: 'would_add', type: 'http', entry: { url: 'https://a.example.com/mcp' } }, `${from}: http`);
    t.match(p.streamable, { outcome: 'would_add', type: 'http', entry: { url: 'https://b.example.com/mcp' } }, `${from}: streamable-http`);
    t.match(p.sse, SSE, `${from}: sse is skipped`);
    t.match(p.stdio, { outcome: 'would_add', type: 'stdio', entry: { command: 'npx', args: ['-y', 'd-mcp'] } }, `${from}: stdio`);
    t.match(p['stdio-with-url'], { outcome: 'would_add', type: 'stdio' }, `${from}: type stdio wins over a url`);
    t.match(p.ws, { outcome: 'skipped', reason: 'unsupported_transport' }, `${from}: a transport Albedo does not have`);
    t.match(p['not-a-string'], { outcome: 'skipped', reason: 'invalid' }, `${from}: a type that is not a string`);
    t.match(p['bare-url'], { outcome: 'would_add', type: 'http', entry: { url: 'https://h.example.com/mcp' } }, `${from}: url alone`);
    t.match(p['bare-command'], { outcome: 'would_add', type: 'stdio' }, `${from}: command alone`);
    // Gemini CLI tries a url without a type as Streamable HTTP, then SSE: Albedo says it will not fall back.
    t.equal(p['bare-url'].warnings.length, from === 'gemini' ? 1 : 0, `${from}: a warning for Gemini's bare url only`);
  }
  // Gemini CLI's older httpUrl is Streamable HTTP whatever type says (Gemini CLI prefers it too).
  const old = put(
    path.join(e.home, 'in', 'old.json'),
    JSON.stringify({ mcpServers: { old: { httpUrl: 'https://j.example.com/mcp', type: 'sse' } } }),
  );
  t.match(byName(await preview(e, 'gemini', old)).old, {
    outcome: 'would_add',
    type: 'http',
    entry: { url: 'https://j.example.com/mcp' },
  });

  // Codex ignores a type (`codex mcp list --json` calls this streamable_http): so does the import.
  const toml = put(path.join(e.home, 'in', 'config.toml'), '[mcp_servers.t]\nurl = "https://k.example.com/mcp"\ntype = "sse"\n');
  t.match(byName(await preview(e, 'codex', toml)).t, {
    outcome: 'would_add',
    type: 'http',
    entry: { url: 'https://k.example.com/mcp' },
  });
});
