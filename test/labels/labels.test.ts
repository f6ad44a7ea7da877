// The labels both screens share (web/shared/labels.js): every state the API
// can report has a label of its own (none falls through to the raw value),
// auth labels tell stdio from fixed credentials and name the account, and the
// suggested name comes from the URL's host or the package a command runs.
import t from 'tap';
import { SERVER_STATES } from '../../protocol/composer.ts';
import {
  AUTH_STATES,
  LIVE_STATES,
  LOGIN_STATES,
  SAVED_STATES,
  SYMBOLS,
  authLabel,
  liveStateLabel,
  loginStateLabel,
  savedStateLabel,
  TILDE_PROBLEM,
  commandTildeProblem,
  relativePathWord,
  suggestName,
  toolsLabel,
  transportOf,
  untaken,
  workingDirProblem,
} from '../../web/shared/labels.js';

t.test('every state the API reports has its own label, tone and symbol', async (t) => {
  for (const s of SERVER_STATES) t.ok(Object.hasOwn(LIVE_STATES, s), `live state ${s}`);
  for (const s of ['disabled', 'error', 'needs_sign_in', 'discovered', 'configured'])
    t.ok(Object.hasOwn(SAVED_STATES, s), `saved state ${s}`);
  for (const s of ['none', 'needs_sign_in', 'signed_in', 'signed_out']) t.ok(Object.hasOwn(AUTH_STATES, s), `auth state ${s}`);
  for (const s of ['pending', 'completed', 'failed']) t.ok(Object.hasOwn(LOGIN_STATES, s), `login state ${s}`);
  for (const table of [LIVE_STATES, SAVED_STATES, AUTH_STATES, LOGIN_STATES]) {
    for (const l of Object.values(table)) t.equal(l.symbol, SYMBOLS[l.tone], `${l.text}: its tone's symbol`);
  }
  t.equal(savedStateLabel('error').tone, 'error');
  t.equal(liveStateLabel('left_out').tone, 'error');
  t.equal(loginStateLabel('pending').tone, 'busy');
  t.match(savedStateLabel('something_new'), { text: 'something_new', tone: 'off' }, 'an unknown state is shown as it is, dimmed');
  t.match(liveStateLabel('__proto__'), { text: '__proto__' }, 'no prototype key is a label');
});

t.test('auth labels: stdio, fixed credentials, the account', async (t) => {
  t.equal(authLabel(null, 'stdio').text, '—');
  t.equal(authLabel(null, 'http').text, 'fixed credentials');
  t.equal(authLabel({ state: 'signed_in', account: 'alice' }, 'http').text, 'signed in as alice');
  t.equal(authLabel({ state: 'signed_in' }, 'http').text, 'signed in');
  t.equal(authLabel({ state: 'needs_sign_in' }, 'http').tone, 'warn');
  t.equal(toolsLabel(null), '—');
  t.equal(toolsLabel(1), '1 tool');
  t.equal(toolsLabel(0), '0 tools');
  t.equal(transportOf({ url: 'https://x' }), 'http');
  t.equal(transportOf({ command: 'x' }), 'stdio');
  t.equal(transportOf({ type: 'stdio', url: 'https://x' }), 'stdio');
});

t.test('the suggested name comes from the host or the package a command runs', async (t) => {
  const cases: Array<['http' | 'stdio', string, string]> = [
    ['http', 'https://mcp.notion.com/mcp', 'notion'],
    ['http', 'https://api.githubcopilot.com/mcp/', 'githubcopilot'],
    ['http', 'http://127.0.0.1:3000/mcp', 'local-3000'],
    ['http', 'http://localhost:8080/', 'local-8080'],
    ['http', 'not a url', ''],
    ['stdio', 'npx -y @modelcontextprotocol/server-filesystem "/srv/my docs"', 'filesystem'],
    ['stdio', 'npx -y @playwright/mcp@latest', 'playwright'],
    ['stdio', 'uvx mcp-server-fetch', 'fetch'],
    ['stdio', '/usr/local/bin/docs-mcp --root /srv', 'docs'],
    ['stdio', 'node ./build/weather.js', 'weather'],
    ['stdio', '/usr/local/bin/node /srv/mcp/tickets-server.ts', 'tickets'],
    ['stdio', '   ', ''],
  ];
  for (const [transport, text, name] of cases) t.equal(suggestName(transport, text), name, `${transport} ${text}`);
});

t.test('a suggested name is never an address, localhost, a bare file name, nor a name taken', async (t) => {
  const cases: Array<['http' | 'stdio', string, string]> = [
    // An address or localhost is not a name: a telling part of the path is, else "local-<port>" for this machine.
    ['http', 'http://127.0.0.1:3000/weather/mcp', 'weather'],
    ['http', 'http://localhost/mcp', 'local'],
    ['http', 'http://[::1]:9000/sse', 'local-9000'],
    ['http', 'http://192.168.1.20:8080/mcp', ''],
    ['http', 'http://10.0.0.5:8080/api/v1/tickets-mcp', 'tickets'],
    ['http', 'http://devbox:8080/mcp', 'devbox'],
    // index.js, main.py, server.js say nothing: the folder above that does.
    ['stdio', 'node /path/to/weather-server/build/index.js', 'weather'],
    ['stdio', 'node /srv/mcp/notes/dist/main.mjs', 'notes'],
    ['stdio', 'python3 /opt/calendar_mcp/server.py', 'calendar'],
    ['stdio', 'node node_modules/@modelcontextprotocol/server-filesystem/dist/index.js .', 'filesystem'],
    ['stdio', 'node /build/index.js', ''],
  ];
  for (const [transport, text, name] of cases) t.equal(suggestName(transport, text), name, `${transport} ${text}`);
  t.equal(
    suggestName('stdio', 'node build/index.js', { cwd: '/home/u/projects/weather-server' }),
    'weather',
    'a relative path: the folder it runs in',
  );
  t.equal(suggestName('stdio', 'node build/index.js'), '', 'and without one, nothing to go on');
  t.equal(suggestName('stdio', 'node /build/index.js', { cwd: '/home/u/weather' }), '', 'an absolute path is not taken from the folder');

  t.equal(suggestName('stdio', 'uvx mcp-server-fetch', { taken: ['fetch'] }), 'fetch-2', 'taken: -2');
  t.equal(suggestName('http', 'https://mcp.notion.com/mcp', { taken: ['notion', 'notion-2', 'other'] }), 'notion-3', 'and -3');
  t.equal(untaken('x', []), 'x');
});

t.test('path fields: a ~ is flagged, a working directory is a full path, relative paths in a command are found', async (t) => {
  t.equal(workingDirProblem(''), '', 'empty: an empty directory of its own');
  t.equal(workingDirProblem(' /srv/docs '), '');
  t.equal(workingDirProblem('~/docs'), TILDE_PROBLEM);
  t.match(workingDirProblem('docs'), /full path/);
  t.equal(commandTildeProblem('npx -y @x/fs ~/docs'), TILDE_PROBLEM);
  t.equal(commandTildeProblem('srv --root=~/docs'), TILDE_PROBLEM, 'a --flag= value too');
  t.equal(commandTildeProblem("srv '~/docs' a~b"), '', 'quoted, or not at the start: meant as written');
  const relative: Array<[string, string]> = [
    ['node build/index.js', 'build/index.js'],
    ['npx -y @modelcontextprotocol/server-filesystem .', '.'],
    ['./server --x', './server'],
    ['bin/server', 'bin/server'],
    ['uv run server.py', 'server.py'],
    ['python ../x.py', '../x.py'],
    ['npx -y @scope/pkg', ''],
    ['docker run -i mcp/github', ''],
    ['node /abs/index.js', ''],
    ['srv --url=http://h/x.js', ''],
    ['uvx mcp-server-fetch', ''],
  ];
  for (const [line, word] of relative) t.equal(relativePathWord(line), word, line);
});
