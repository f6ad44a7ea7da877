// The host snippets of docs/gateway.md ("Snippets for each host") are in the
// formats those hosts read: each JSON or TOML block is read by `albedo mcp
// import --from HOST` (a dry run, against a real daemon), whose readers are
// tested against files Claude Code 2.1.197, Gemini CLI 0.61.0 and Codex
// 0.171.0 wrote themselves (test/fixtures/import/). Each block must give the
// stdio form (`albedo gateway NAME`) and, where the host has one, the HTTP
// form: the gateway's URL with its token read from a variable or an input,
// never written in the file.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, newTag, tempDir, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

const URL_OF = (name: string): string => `http://127.0.0.1:47100/mcp/gateways/${name}`;

/** The fenced blocks under each `### Host` of the snippets section: [host, language, text]. */
function snippets(): Array<[string, string, string]> {
  const doc = readFileSync(path.join(ROOT, 'docs', 'gateway.md'), 'utf8');
  const from = doc.indexOf('## Snippets for each host');
  const section = doc.slice(from, doc.indexOf('\n## ', from + 1));
  const out: Array<[string, string, string]> = [];
  for (const part of section.split('\n### ').slice(1)) {
    const host = part.slice(0, part.indexOf('\n'));
    for (const m of part.matchAll(/```(json|toml)\n([\s\S]*?)```/g)) out.push([host, m[1]!, m[2]!]);
  }
  return out;
}

const HOSTS: Record<string, { from: string; gateway: string; file: string; http: 'env' | 'input' | null }> = {
  'Claude Code': { from: 'claude-code', gateway: 'claude', file: '.mcp.json', http: 'env' },
  'Claude Desktop': { from: 'claude', gateway: 'claude', file: 'claude_desktop_config.json', http: null },
  Cursor: { from: 'cursor', gateway: 'cursor', file: 'mcp.json', http: 'env' },
  'VS Code': { from: 'vscode', gateway: 'vscode', file: 'mcp.json', http: 'input' },
  Codex: { from: 'codex', gateway: 'codex', file: 'config.toml', http: 'env' },
  'Gemini CLI': { from: 'gemini', gateway: 'gemini', file: 'settings.json', http: 'env' },
};

t.test('every host snippet is read as that host’s format', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  await startDaemon(t, e.home, { tag: e.tag });
  const blocks = snippets();
  t.same([...new Set(blocks.map(([h]) => h))].sort(), Object.keys(HOSTS).sort(), 'a block for each host');
  for (const [host, , text] of blocks) {
    const h = HOSTS[host]!;
    const dir = tempDir(t, 'albedo-snippet-');
    const file = path.join(dir, h.file);
    writeFileSync(file, text);
    const r = await piped(e, ['mcp', 'import', '--from', h.from, file, '--json']);
    t.equal(r.code, 0, `${host}: ${r.stderr}`);
    const servers = JSON.parse(r.stdout).servers as any[];
    const stdio = servers.find((s) => s.type === 'stdio');
    t.match(stdio, { outcome: 'would_add', entry: { args: ['gateway', h.gateway] } }, `${host}: the stdio form`);
    t.match(stdio?.entry.command, /(^|\/)albedo$/, `${host}: runs albedo`);
    t.same(stdio?.secrets, [], `${host}: no secret`);
    const http = servers.find((s) => s.type === 'http');
    if (!h.http) {
      t.notOk(http, `${host}: no HTTP form`);
      continue;
    }
    t.equal(http?.entry.url, URL_OF(h.gateway), `${host}: the gateway's URL`);
    if (h.http === 'env') t.equal(http?.entry.bearerTokenEnvVar, 'ALBEDO_GATEWAY_TOKEN', `${host}: the token from a variable`);
    else t.same(http?.inputs, ['albedo-token'], `${host}: the token from an input`);
    t.notMatch(text, /albgw_/, `${host}: no token in the file`);
  }
});
