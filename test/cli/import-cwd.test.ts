// Where an imported stdio server runs (docs/config.md "Working directory"):
// a project's file (.mcp.json, .vscode/mcp.json, .cursor/mcp.json, …) is run
// by its host in that project, so its servers are saved with that directory
// as `cwd` — shown in the plan — and a relative path in them means what it
// meant there (the reference filesystem server given "." serves the
// project); a user-wide file (Claude Desktop's, ~/.cursor/mcp.json) names no
// directory, and its servers keep the daemon's default, an empty directory
// of their own. A `cwd` the file gives is kept, a relative one taken from
// the project.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, ROOT, newTag, tempDir, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

const FS = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

const write = (file: string, doc: unknown): string => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(doc));
  return file;
};

/**
 * A filesystem server serving ".", tagged: Claude Code spells the daemon's variable ${VAR}, VS Code
 * and Cursor ${env:VAR}, Claude Desktop has none.
 */
const fsServer = (extra: Record<string, unknown> = {}, tag: string | null = '${TEST_SERVER_TAG}') => ({
  command: NODE,
  args: [FS, '.'],
  ...(tag ? { env: { ALBEDO_TEST_TAG: tag } } : {}),
  ...extra,
});
const ENV_TAG = '${env:TEST_SERVER_TAG}';

const byName = (out: any): Record<string, any> => Object.fromEntries(out.servers.map((s: any) => [s.name, s]));

t.test("a project's .mcp.json: its servers run in the project, as Claude Code runs them", async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const project = tempDir(t, 'albedo-import-project-');
  mkdirSync(path.join(project, 'data'));
  const file = write(path.join(project, '.mcp.json'), {
    mcpServers: { fs: fsServer(), sub: fsServer({ cwd: 'data' }), abs: fsServer({ cwd: '/' }) },
  });

  const preview = await piped(e, ['mcp', 'import', '--from', 'claude-code', file, '--json']);
  t.equal(preview.code, 0, preview.stderr);
  const ps = byName(JSON.parse(preview.stdout));
  t.equal(ps.fs.entry.cwd, project, 'no cwd in the file: the project');
  t.equal(ps.sub.entry.cwd, path.join(project, 'data'), 'a relative cwd: taken from the project');
  t.equal(ps.abs.entry.cwd, '/', 'an absolute one: kept');
  const human = await piped(e, ['mcp', 'import', '--from', 'claude-code', file]);
  t.match(human.stdout, /RUNS IN/, 'the plan has the column');
  t.match(
    human.stdout,
    new RegExp(`^add\\s+fs\\s+stdio\\s.*${project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'),
    'and says where fs runs',
  );

  // From the project itself (./.mcp.json found), added: "." is the project.
  const added = await piped({ ...e, cwd: project }, ['mcp', 'import', '--from', 'claude-code', '--yes', '--json']);
  t.equal(added.code, 0, added.stderr);
  t.match(byName(JSON.parse(added.stdout)).fs, { outcome: 'added' });
  const allowed = await piped(e, ['call', 'fs/list_allowed_directories', '--json']);
  t.equal(allowed.code, 0, allowed.stderr);
  const text: string = JSON.parse(allowed.stdout)
    .content.map((c: { text?: string }) => c.text ?? '')
    .join('\n');
  t.same(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => path.isAbsolute(l)),
    [project],
    'the server serves the project',
  );
});

t.test("VS Code's workspace file runs in the workspace; user-wide files name no directory", async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const user = tempDir(t, 'albedo-import-user-');
  const project = path.join(user, 'code', 'app');
  const run = async (from: string, file: string) => {
    // HOME is the user's here: ~/.cursor/mcp.json is the user-wide file, not a project's.
    const r = await piped({ ...e, env: { HOME: user } }, ['mcp', 'import', '--from', from, file, '--json']);
    t.equal(r.code, 0, `${from}: ${r.stderr}`);
    return byName(JSON.parse(r.stdout));
  };
  const vs = await run('vscode', write(path.join(project, '.vscode', 'mcp.json'), { servers: { fs: fsServer({}, ENV_TAG) } }));
  t.equal(vs.fs.entry.cwd, project, 'the folder holding .vscode/');
  const cursorProject = await run(
    'cursor',
    write(path.join(project, '.cursor', 'mcp.json'), { mcpServers: { fs: fsServer({}, ENV_TAG) } }),
  );
  t.equal(cursorProject.fs.entry.cwd, project, 'the folder holding .cursor/');
  const cursorUser = await run('cursor', write(path.join(user, '.cursor', 'mcp.json'), { mcpServers: { fs: fsServer({}, ENV_TAG) } }));
  t.notOk('cwd' in cursorUser.fs.entry, "~/.cursor/mcp.json is the user's: no directory (never the home itself)");
  const desktop = await run(
    'claude',
    write(path.join(user, 'Claude', 'claude_desktop_config.json'), { mcpServers: { fs: fsServer({}, null) } }),
  );
  t.notOk('cwd' in desktop.fs.entry, 'Claude Desktop names none');

  // Added without a directory, "." is the server's own empty directory, not where the import ran.
  const added = await piped({ ...e, cwd: user, env: { HOME: user } }, [
    'mcp',
    'import',
    '--from',
    'cursor',
    path.join(user, '.cursor', 'mcp.json'),
    '--yes',
  ]);
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /\(an empty directory of its own\)/, 'the plan says so');
  const allowed = await piped(e, ['call', 'fs/list_allowed_directories', '--json']);
  t.equal(allowed.code, 0, allowed.stderr);
  const text: string = JSON.parse(allowed.stdout)
    .content.map((c: { text?: string }) => c.text ?? '')
    .join('\n');
  const dirs = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => path.isAbsolute(l));
  t.equal(dirs.length, 1);
  t.not(dirs[0], user, 'not the directory the import ran in');
});
