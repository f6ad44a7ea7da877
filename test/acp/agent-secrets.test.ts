// An ACP agent's command line as the daemon records and shows it: values that
// look like secrets masked (`--api-key=V`, `--token V`, `API_KEY=V`, `sk-…`,
// `ghp_…`, `xox…`, long hex or base64), once, where the daemon records the
// agent, so no view has them: not acp-sessions.json nor any file of the home,
// not an API answer, not `albedo status` or its `--json`, not the log. A record
// an older daemon wrote with them is masked when it is read back.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { maskArgv, looksLikeCredential } from '../../protocol/redact-argv.ts';
import { NODE, filesHolding, fixture, newTag, tempDir, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from '../cli/cli-harness.ts';

t.setTimeout(240_000);

const rnd = (): string => randomBytes(5).toString('hex');
const S = {
  key: `sk-proj-${rnd()}${rnd()}`,
  token: `ghp_${rnd()}${rnd()}${rnd()}`,
  password: `pw-${rnd()}`,
  slack: `xoxb-${rnd()}-${rnd()}`,
  hex: randomBytes(20).toString('hex'),
  b64: `Ab3Zq9Xy7Kk${randomBytes(16).toString('hex')}`,
  env: `env-${rnd()}`,
  secretOpt: `so-${rnd()}`,
};
const SECRETS = Object.values(S);
const ARGS = [
  'agent',
  '--experimental-acp',
  `--api-key=${S.key}`,
  '--token',
  S.token,
  '-password',
  S.password,
  S.slack,
  S.hex,
  `--data=${S.b64}`,
  `OPENAI_API_KEY=${S.env}`,
  '--client-secret',
  S.secretOpt,
  `--url=https://example.test/?k=${S.key}`,
  '--model',
  'gemini-2.5-pro',
  '/home/user/projects/some-agent/bin/agent-binary',
];

t.test('maskArgv: the secret-looking values, nothing else', async (t) => {
  const out = maskArgv(ARGS);
  for (const s of SECRETS)
    t.notOk(
      out.some((a) => a.includes(s)),
      `masked: ${s.slice(0, 6)}…`,
    );
  t.same(out, [
    'agent',
    '--experimental-acp',
    '--api-key=[redacted]',
    '--token',
    '[redacted]',
    '-password',
    '[redacted]',
    '[redacted]',
    '[redacted]',
    '--data=[redacted]',
    'OPENAI_API_KEY=[redacted]',
    '--client-secret',
    '[redacted]',
    '--url=https://example.test/?k=[redacted]',
    '--model',
    'gemini-2.5-pro',
    '/home/user/projects/some-agent/bin/agent-binary',
  ]);
  t.same(maskArgv(['--header', 'Authorization: Bearer abcdefgh']), ['--header', 'Authorization: [redacted]']);
  t.same(maskArgv(['--verbose', '--key-file', '-']), ['--verbose', '--key-file', '-'], 'an option after a secret-named flag stays');
  for (const plain of ['claude-code-acp', '@zed-industries/codex-acp', '0b7c8d2e-1f3a-4b5c-9d6e-7f8091a2b3c4', 'x'.repeat(40)])
    t.notOk(looksLikeCredential(plain), `not a credential: ${plain}`);
});

t.test('the daemon records and shows the agent masked', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag });
  t.equal((await d.call('PUT', srv('conf'), { body: sdkServer() })).status, 201, 'a configured server');
  const cwd = tempDir(t, 'acp-secrets-cwd-');
  const ed = { name: 'ed', command: NODE, args: [fixture('sdk-server.ts')], env: [{ name: 'ALBEDO_TEST_TAG', value: e.tag }] };
  const agent = { command: '/usr/bin/env', args: ARGS };
  const created = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [ed], agent } });
  t.equal(created.status, 201, 'created');
  const id = created.body.id as string;
  const tok = { 'albedo-attachment-token': created.body.token };
  t.equal((await d.call('PATCH', `/v1/acp/sessions/${id}`, { body: { acpSessionId: 'agent-k' }, headers: tok })).status, 204);
  t.equal((await d.call('DELETE', `/v1/acp/sessions/${id}/attachment`, { headers: tok })).status, 204);
  const again = await d.call('POST', '/v1/acp/attach', { body: { acpSessionId: 'agent-k', cwd, mcpServers: [ed], agent } });
  t.equal(again.status, 200, 'attached again, with the same agent');

  const one = await d.call('GET', `/v1/acp/sessions/${id}`);
  t.same(one.body.agent, { command: '/usr/bin/env', args: maskArgv(ARGS) }, 'shown masked');
  const answers = [created, again, one, await d.call('GET', '/v1/acp/sessions')];
  const status = await piped(e, ['status']);
  const json = await piped(e, ['status', '--json']);
  t.equal(json.code, 0, json.stderr);
  t.same(JSON.parse(json.stdout).acp[0].agent.args, maskArgv(ARGS), 'status --json: masked');
  t.ok(status.stdout.includes('--api-key=[redacted]'), 'status: masked');
  for (const s of SECRETS) {
    t.same(filesHolding(e.home, s), [], `in no file of the home: ${s.slice(0, 6)}…`);
    t.notOk(
      answers.some((r) => r.text.includes(s)),
      'in no API answer',
    );
    t.notOk(status.stdout.includes(s) || json.stdout.includes(s), 'nor in albedo status');
    t.notOk(
      d.lines.some((l) => l.includes(s)),
      'nor in the log',
    );
  }
});

t.test('a record an older daemon wrote unmasked is masked when read back', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const cwd = tempDir(t, 'acp-secrets-old-');
  const created = await d.call('POST', '/v1/acp/sessions', { body: { cwd, mcpServers: [], agent: { command: 'agent', args: [] } } });
  t.equal(created.status, 201);
  await d.stop('SIGKILL');
  const file = path.join(home, 'acp-sessions.json');
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  doc.sessions[created.body.id].agent.args = ARGS;
  writeFileSync(file, JSON.stringify(doc));
  const d2 = await startDaemon(t, home, { tag });
  t.same((await d2.call('GET', `/v1/acp/sessions/${created.body.id}`)).body.agent.args, maskArgv(ARGS), 'shown masked');
  for (const s of SECRETS) t.same(filesHolding(home, s), [], `rewritten without ${s.slice(0, 6)}…`);
});
