// The REST bridge's rules for one albedo_request call (daemon/bridge-request.ts),
// alone: the methods, the path (daemon-relative, on the daemon's origin, exactly
// as given: no host, no escape, no encoded trick, not /mcp nor /ui, at most
// 4,096 characters), the body (an object, never on GET or HEAD). Each refusal
// names the field at fault.
import t from 'tap';
import { MAX_PATH_CHARS, parseBridgeRequest, pathProblem } from '../../daemon/bridge-request.ts';

const ORIGIN = 'http://127.0.0.1:40123';
const parse = (input: unknown) => parseBridgeRequest(input, ORIGIN);

t.test('a well-formed call: every method, a query string, a body on the methods that take one', async (t) => {
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) {
    t.same(parse({ method, path: '/v1/mcp' }), { ok: true, request: { method, path: '/v1/mcp' } }, method);
  }
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    const body = { command: 'node', args: ['x.js'] };
    t.same(parse({ method, path: '/v1/mcp/servers/a', body }), { ok: true, request: { method, path: '/v1/mcp/servers/a', body } });
  }
  for (const path of [
    '/v1/mcp/servers?dry_run=true',
    '/v1/health?nonce=0123456789abcdef',
    '/v1/sessions/s1/search?q=%2e%2e%2f', // a query string is not a path: its escapes are the route's to read
    '/v1/mcp/servers/a%20b', // an escape that spells an ordinary character
    '/v1/mcp/servers/h.example.com%2Fmcp', // past the first segment a name may hold a slash (an HTTP server's derived name)…
    '/v1/mcp/servers/50%25', // …a "%"…
    '/v1/mcp/servers/a%5Cb', // …or a backslash
    '/v1/mcp-ish', // only /mcp itself and under it are the bridge's
    '/v1/ui',
    '/' + 'a'.repeat(MAX_PATH_CHARS - 1),
  ]) {
    t.equal(pathProblem(path, ORIGIN), null, `${path.slice(0, 60)} is taken`);
  }
});

t.test('methods: only the six, in capitals', async (t) => {
  for (const method of ['OPTIONS', 'TRACE', 'CONNECT', 'get', 'Post', '', 7, null, undefined]) {
    const r = parse({ method, path: '/v1/mcp' });
    t.same(r.ok ? null : r.problem.path, ['method'], `${JSON.stringify(method)} refused at method`);
  }
});

t.test('paths: only one on the daemon, exactly as given', async (t) => {
  const refused: Array<[string, string]> = [
    ['http://127.0.0.1:40123/v1/mcp', 'an absolute URL, even of the daemon'],
    ['https://evil.example/v1/mcp', 'an absolute URL elsewhere'],
    ['//evil.example/v1/mcp', 'a scheme-relative URL'],
    ['///evil.example/v1', 'three slashes'],
    ['v1/mcp', 'a relative path'],
    ['', 'an empty path'],
    ['/v1/health/../mcp/servers', 'a ".." segment'],
    ['/v1/mcp/servers/..', 'a trailing ".."'],
    ['/v1/./mcp', 'a "." segment'],
    ['/v1/%2e%2e/mcp', 'an encoded ".."'],
    ['/v1/%2E%2e/mcp', 'an encoded ".." in mixed case'],
    ['/v1/.%2e/mcp', 'half encoded ".."'],
    ['/v1%2fmcp', 'an encoded slash in the first segment'],
    ['/v1%5cmcp', 'an encoded backslash in the first segment'],
    ['/%6dcp%2fgateways', 'the bridge behind an encoded slash'],
    ['/v1/%252e%252e/mcp', 'a doubly encoded ".."'],
    ['/v1%25', 'an encoded "%" in the first segment'],
    ['/v1/%zz', 'a "%" without two hex digits'],
    ['/v1/%4', 'a "%" cut short'],
    ['/v1/%00', 'an encoded NUL'],
    ['/v1\\mcp', 'a backslash'],
    ['/\\evil.example/v1', 'a backslash read as a second slash'],
    ['/v1/mcp#frag', 'a fragment'],
    ['/v1/mcp\u0000', 'a NUL'],
    ['/v1/mcp\r\nX-Injected: 1', 'CR LF'],
    ['/v1/mcp\t', 'a tab'],
    ['/v1/mcp\u007f', 'DEL'],
    ['/v1/a b', 'a space (URL parsing would encode it)'],
    ['/v1/é', 'a non-ASCII character (URL parsing would encode it)'],
    ['/v1/mcp?', 'an empty query (URL parsing would drop it)'],
    ['/mcp', 'the bridge itself'],
    ['/mcp/gateways/x', 'a gateway'],
    ['/MCP', 'the bridge in capitals'],
    ['/%6dcp', 'the bridge with an encoded letter'],
    ['/ui', 'the web pane'],
    ['/ui/login?code=x', "the web pane's login"],
    ['/' + 'a'.repeat(MAX_PATH_CHARS), '4,097 characters'],
  ];
  for (const [path, what] of refused) {
    t.not(pathProblem(path, ORIGIN), null, `${what}: refused`);
    const r = parse({ method: 'GET', path });
    t.same(r.ok ? null : r.problem.path, ['path'], `${what}: refused at path`);
    if (!r.ok) t.match(r.problem.message, /^path: /, 'the message starts with the field');
  }
  t.same(parse({ method: 'GET', path: 42 }).ok, false, 'a path that is no string');
});

t.test('bodies: a JSON object, and none on GET or HEAD', async (t) => {
  for (const body of [[], [1], 'x', 3, true, null]) {
    const r = parse({ method: 'POST', path: '/v1/sessions', body });
    t.same(r.ok ? null : r.problem.path, ['body'], `${JSON.stringify(body)} refused at body`);
  }
  for (const method of ['GET', 'HEAD']) {
    const r = parse({ method, path: '/v1/mcp', body: {} });
    t.same(r.ok ? null : r.problem.path, ['body'], `${method} with a body refused at body`);
  }
});

t.test('arguments: an unknown one is named; none at all is a missing method', async (t) => {
  const r = parse({ method: 'GET', path: '/v1/mcp', headers: { 'x-a': '1' } });
  t.same(r.ok ? null : r.problem.path, ['headers']);
  const none = parse(undefined);
  t.same(none.ok ? null : none.problem.path, ['method']);
});
