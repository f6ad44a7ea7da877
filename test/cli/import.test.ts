// `albedo mcp import` (issue 11, item 3) from real config files of other
// hosts (test/fixtures/import/, filled in with this machine's paths): the
// preview changes nothing; --yes adds each server through the daemon's
// strict save; a literal secret becomes a typed secret and a variable a
// named one, never a value in extensions.json; VS Code's inputs are asked
// for on a terminal (not echoed) and skipped without one.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, ROOT, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { errorCode, piped, screenJson, term, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

/** A fixture of test/fixtures/import/ with @NODE@, @FIXTURES@, @TAG@ and @HTTP_URL@ filled in, written to `to`. */
function fill(name: string, to: string, vars: Record<string, string>): string {
  let text = readFileSync(fixture(path.join('import', name)), 'utf8');
  for (const [k, v] of Object.entries({ NODE, FIXTURES: path.join(ROOT, 'test', 'fixtures'), ...vars }))
    text = text.replaceAll(`@${k}@`, v);
  mkdirSync(path.dirname(to), { recursive: true });
  writeFileSync(to, text);
  return to;
}
const ext = (home: string): string =>
  existsSync(path.join(home, 'extensions.json')) ? readFileSync(path.join(home, 'extensions.json'), 'utf8') : '';
const byName = (out: any): Record<string, any> => Object.fromEntries(out.servers.map((s: any) => [s.name, s]));

t.test('Claude Desktop: the preview changes nothing; --yes adds what can start, literal env values stored as secrets', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const file = fill('claude_desktop_config.json', path.join(e.home, 'in', 'claude_desktop_config.json'), { TAG: e.tag });

  const preview = await term(e, ['mcp', 'import', '--from', 'claude', file, '--json']);
  t.equal(preview.code, 0, preview.screen);
  const p = screenJson(preview);
  t.match(p, { from: 'claude', file, added: false });
  const ps = byName(p);
  t.match(ps.sdk, { outcome: 'would_add', type: 'stdio', entry: { command: NODE, args: [fixture('sdk-server.ts')] } });
  t.same(ps.sdk.secrets.sort(), ['env ALBEDO_TEST_TAG', 'env API_KEY'], 'literal env values are to be typed secrets');
  t.notOk('env' in ps.sdk.entry, 'and not in the entry');
  t.match(ps.broken, { outcome: 'would_add' });
  t.match(ps['no-command'], { outcome: 'skipped', reason: 'invalid' });
  t.notOk(preview.screen.includes('sk-live-claude-0123456789'), 'no secret value shown');
  t.equal(ext(e.home), '', 'the preview saved nothing');
  t.same((await d.call('GET', '/v1/mcp/servers')).body.servers, []);

  const human = await term(e, ['mcp', 'import', '--from', 'claude', file]);
  t.equal(human.code, 0);
  t.match(human.screen, /^add\s+sdk\s+stdio\s/m);

  const added = await term(e, ['mcp', 'import', '--from', 'claude', file, '--yes', '--json']);
  t.equal(added.code, 1, 'one server failed to start: exit 1');
  const as = byName(screenJson(added));
  t.match(as.sdk, { outcome: 'added', check: { tried: true, result: 'connected' } });
  t.match(as.broken, { outcome: 'failed', error: { code: 'ALBEDO_SPAWN_FAILED' } });
  const servers = (await d.call('GET', '/v1/mcp/servers')).body.servers;
  t.same(
    servers.map((s: any) => s.name),
    ['sdk'],
    'what could start was added, the rest was not',
  );
  t.same(servers[0].secrets.env.sort(), ['ALBEDO_TEST_TAG', 'API_KEY']);
  t.notOk(ext(e.home).includes('sk-live-claude-0123456789'), 'no secret value in extensions.json');

  const again = await term(e, ['mcp', 'import', '--from', 'claude', file, '--json']);
  t.match(byName(screenJson(again)).sdk, { outcome: 'skipped', reason: 'exists' }, 'a configured name is skipped');
});

t.test('VS Code mcp.json: ${env:} named, ${input:} asked for on a terminal, what Albedo cannot keep is skipped', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag, env: { WEB_TOKEN: 'tok-vscode' } });
  const web = await httpFixture(t, e.tag, fixture('sdk-http-server.ts'), ['--bearer', 'tok-vscode']);
  const file = fill('vscode-mcp.json', path.join(e.home, 'in', 'mcp.json'), { HTTP_URL: web.url });

  const preview = await piped(e, ['mcp', 'import', '--from', 'vscode', file, '--json']);
  t.equal(preview.code, 0, preview.stderr);
  const ps = byName(JSON.parse(preview.stdout));
  t.match(ps.docs, { outcome: 'would_add', inputs: ['api-key'], entry: { env: { ALBEDO_TEST_TAG: { env: 'TEST_SERVER_TAG' } } } });
  t.same(ps.docs.secrets.sort(), ['env DOCS_API_KEY', 'env DOCS_ROOT']);
  t.match(ps.web, { outcome: 'would_add', type: 'http', entry: { url: web.url, bearerTokenEnvVar: 'WEB_TOKEN' }, secrets: [] });
  t.match(ps.legacy, { outcome: 'skipped', reason: 'unsupported_transport' });
  t.match(ps.embedded, { outcome: 'skipped', reason: 'variable_in_args' });

  const noTerminal = await piped(e, ['mcp', 'import', '--from', 'vscode', file, '--yes', '--json']);
  t.equal(noTerminal.code, 0, noTerminal.stderr);
  const nt = byName(JSON.parse(noTerminal.stdout));
  t.match(nt.docs, { outcome: 'skipped', reason: 'needs_input' }, 'an input cannot be asked for without a terminal');
  t.match(nt.web, { outcome: 'added', check: { result: 'connected' } }, "the daemon's WEB_TOKEN was sent as the bearer");

  const typed = await term(
    e,
    ['mcp', 'import', '--from', 'vscode', file, '--yes', '--json'],
    [[/Docs API key \(api-key, for docs\): /, 'typed-api-key-42']],
  );
  t.equal(typed.code, 0, typed.screen);
  const json = JSON.parse(typed.screen.slice(typed.screen.indexOf('{')));
  t.match(byName(json).docs, { outcome: 'added', check: { result: 'connected' } });
  t.match(byName(json).web, { outcome: 'skipped', reason: 'exists' });
  t.notOk(typed.screen.includes('typed-api-key-42'), 'a password input is not echoed');
  t.notOk(ext(e.home).includes('typed-api-key-42'), 'nor written to extensions.json');
  const docs = await term(e, ['mcp', 'show', 'docs', '--json']);
  t.same(screenJson(docs).secrets.env.sort(), ['DOCS_API_KEY', 'DOCS_ROOT'], 'the typed value is a stored secret');
});

t.test('Claude Code, Cursor, Gemini CLI and Codex files, VS Code with comments; a missing or broken file is refused', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const preview = async (from: string, args: string[], cwd?: string) => {
    const r = await piped({ ...e, cwd }, ['mcp', 'import', '--from', from, ...args, '--json']);
    t.equal(r.code, 0, `${from}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };

  const cc = byName(await preview('claude-code', [fixture('import/claude-code.mcp.json')]));
  t.match(cc.api, {
    outcome: 'would_add',
    entry: { url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'API_TOKEN', headers: { 'X-Team': { env: 'TEAM' } } },
  });
  t.equal(cc.api.warnings.length, 1, 'the default of ${TEAM:-core} is not kept, and it says so');
  t.match(cc.local, { outcome: 'would_add', entry: { command: 'npx', args: ['-y', 'some-mcp-server'] }, secrets: ['env KEY'] });
  t.match(cc.events, { outcome: 'skipped', reason: 'unsupported_transport' });

  // Cursor's project file, found from the working directory; ${workspaceFolder} is the folder holding .cursor/.
  const ws = path.join(e.home, 'project');
  fill('cursor-mcp.json', path.join(ws, '.cursor', 'mcp.json'), {});
  const cu = await preview('cursor', [], ws);
  t.equal(cu.file, path.join(ws, '.cursor', 'mcp.json'), "the project's file by default");
  const cus = byName(cu);
  t.match(cus.remote, { outcome: 'would_add', entry: { bearerTokenEnvVar: 'CURSOR_TOKEN' } });
  t.match(cus.files, {
    outcome: 'would_add',
    entry: { args: ['-y', 'files-mcp', path.join(ws, 'src')], env: { LOG: { env: 'LOG_LEVEL' } } },
  });

  const ge = byName(await preview('gemini', [fixture('import/gemini-settings.json')]));
  t.match(ge.stream, { outcome: 'would_add', type: 'http', entry: { callTimeoutMs: 5000 }, secrets: ['header Authorization'] });
  t.match(ge.sse, { outcome: 'skipped', reason: 'unsupported_transport' });
  t.match(
    ge.bare,
    { outcome: 'would_add', type: 'http', entry: { url: 'https://mcp.example.com/mcp' } },
    'a url without a type: Streamable HTTP',
  );
  t.equal(ge.bare.warnings.length, 1, 'Gemini CLI would fall back to SSE; Albedo does not, and says so');
  t.match(ge.tools, {
    outcome: 'would_add',
    entry: { env: { API_KEY: { env: 'MY_API_KEY' } }, enabledTools: ['search'], disabledTools: ['delete'] },
  });

  // Codex's config.toml: timeouts in seconds, env_vars and env_http_headers name variables, literals become secrets.
  const cx = byName(await preview('codex', [fixture('import/codex-config.toml')]));
  t.match(cx.files, {
    outcome: 'would_add',
    type: 'stdio',
    entry: {
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/docs'],
      env: { LOG_LEVEL: { env: 'LOG_LEVEL' } },
      startupTimeoutMs: 20_000,
      callTimeoutMs: 45_500,
      enabledTools: ['read_file', 'list_directory'],
    },
    secrets: ['env API_KEY'],
  });
  t.notOk(JSON.stringify(cx.files).includes('sk-literal-codex-key'), 'a secret value is never shown');
  t.match(cx.remote, {
    outcome: 'would_add',
    entry: {
      url: 'https://mcp.example.com/mcp',
      bearerTokenEnvVar: 'REMOTE_TOKEN',
      headers: { 'X-Team': { env: 'TEAM_ID' } },
      enabled: false,
    },
  });
  t.match(cx.literal, { outcome: 'would_add', secrets: ['header X-Api-Key'] });
  writeFileSync(path.join(e.home, 'bad.toml'), '[mcp_servers.x\ncommand = 1');
  const badToml = await piped(e, ['mcp', 'import', '--from', 'codex', path.join(e.home, 'bad.toml')]);
  t.equal(badToml.code, 1);
  t.equal(errorCode(badToml.stderr), 'ALBEDO_INVALID_CONFIG', 'a TOML error is a clear refusal');
  const missing = await piped(e, ['mcp', 'import', '--from', 'claude', path.join(e.home, 'nowhere.json')]);
  t.equal(missing.code, 4);
  t.equal(errorCode(missing.stderr), 'ALBEDO_NOT_FOUND');
  // VS Code's files may hold comments and trailing commas (JSONC); a file broken anyway is still refused.
  writeFileSync(
    path.join(e.home, 'commented.json'),
    '{ "servers": { // a comment\n "c": { "command": "npx", "args": ["-y", "c-mcp"], }, /* more */ } }',
  );
  const commented = byName(await preview('vscode', [path.join(e.home, 'commented.json')]));
  t.match(commented.c, { outcome: 'would_add', entry: { command: 'npx', args: ['-y', 'c-mcp'] } }, 'comments and trailing commas are read');
  writeFileSync(path.join(e.home, 'broken.json'), '{ "servers": { // a comment\n "x": } }');
  const jsonc = await piped(e, ['mcp', 'import', '--from', 'vscode', path.join(e.home, 'broken.json')]);
  t.equal(jsonc.code, 1);
  t.equal(errorCode(jsonc.stderr), 'ALBEDO_INVALID_CONFIG');
});
