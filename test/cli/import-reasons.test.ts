// `albedo mcp import --yes`: a server the daemon refuses is reported with
// the daemon's reason as a person reads it (issue 26, CLI wording): the
// field in the entry's own words (`url`, `cwd`), never the API's path
// (`(at body.url)`), and the code kept in front; `--json` keeps the exact
// code and path for a program.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { piped } from './cli-harness.ts';

t.setTimeout(170_000);

t.test('import reasons name the field, not the API path', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const dir = mkdtempSync(path.join(tmpdir(), 'albedo-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'claude.json');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        ftp: { url: 'ftp://example.com/mcp' },
        nowhere: { command: NODE, args: ['-e', '1'], cwd: path.join(dir, 'missing') },
      },
    }),
  );
  const r = await piped(e, ['mcp', 'import', '--from', 'claude', file, '--yes']);
  t.equal(r.code, 1, 'a failed server: exit 1');
  t.match(r.stdout, /ALBEDO_INVALID_ARGUMENT: url "ftp:\/\/example\.com\/mcp" must be an http or https URL/);
  t.match(r.stdout, /ALBEDO_INVALID_CONFIG: .*cwd/);
  t.notMatch(r.stdout, /\(at |body\./, 'no API path');
  const j = await piped(e, ['mcp', 'import', '--from', 'claude', file, '--yes', '--json']);
  const rows = JSON.parse(j.stdout).servers as Array<{ name: string; error?: { code: string; path?: unknown[] } }>;
  t.match(rows.find((x) => x.name === 'ftp')?.error, { code: 'ALBEDO_INVALID_ARGUMENT', path: ['body', 'url'] }, '--json keeps the path');
});
