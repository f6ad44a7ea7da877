import t from 'tap';
import { albedoFor, newTag, fixture, httpFixture, rejection, tempHome, until } from '../helpers.ts';

const SDK2 = fixture('sdk-http-server.ts');
const SDK1 = fixture('sdk1-http-server.ts');

t.test('official SDK 2.x dual-era server over HTTP: modern, full catalogue, calls', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'dual']);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url });
  t.equal(c.era, 'modern');
  t.equal(c.protocolVersion, '2026-07-28');
  t.same(c.info.serverInfo, { name: 'albedo-fixture-sdk2', version: '2.4.0' });
  t.same(
    c.catalogue.tools.map((x) => x.name),
    ['echo', 'add', 'sleep', 'fail', 'add_tool', 'regional', 'confirm'],
    'bad_header is left out',
  );
  t.match(c.warnings.join('\n'), /left out tool "bad_header": x-mcp-header "N" .* type "number"/);
  t.same(
    c.catalogue.resources.map((x) => x.uri),
    ['fixture://readme'],
  );
  t.same(
    c.catalogue.prompts.map((x) => x.name),
    ['greet'],
  );
  t.same((await c.callTool('add', { a: 2, b: 40 })).structuredContent, { sum: 42 });
  t.same((await c.readResource('fixture://items/7')).contents[0], { uri: 'fixture://items/7', text: 'item 7' });
  t.match((await c.getPrompt('greet', { name: 'Ada' })).messages[0], { content: { text: 'Hello, Ada!' } });
  // The server checks Mcp-Param-Region against the body (after base64 decoding): a mismatch would be -32020.
  t.equal((await c.callTool('regional', { region: 'eu-west1', query: 'q' })).content[0].text, 'eu-west1: q');
  t.equal(
    (await c.callTool('regional', { region: ' Zürich 世界 ', query: 'q' })).content[0].text,
    ' Zürich 世界 : q',
    'non-ASCII and edge spaces go base64',
  );
  t.equal(
    (await c.callTool('regional', { region: '=?base64?x?=', query: 'q' })).content[0].text,
    '=?base64?x?=: q',
    'a value that looks like the sentinel is encoded too',
  );
  t.equal((await c.callTool('echo', { text: 'ünïcödé name' })).content[0].text, 'ünïcödé name');
});

t.test('official SDK 2.x modern-only server over HTTP', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'modern']);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ type: 'http', url: srv.url });
  t.equal(c.era, 'modern');
  t.equal((await c.callTool('echo', { text: 'modern only' })).content[0].text, 'modern only');
});

t.test('official SDK 2.x sessionful server (NodeStreamableHTTPServerTransport) is legacy', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'sessionful']);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url });
  t.equal(c.era, 'legacy');
  t.equal(c.protocolVersion, '2025-11-25');
  t.equal(c.catalogue.tools.length, 8, 'x-mcp-header rules are for 2026-07-28 connections');
  t.equal((await c.callTool('echo', { text: 'sessions' })).content[0].text, 'sessions');
  t.match((await c.getPrompt('greet', { name: 'Bo' })).messages[0], { content: { text: 'Hello, Bo!' } });
});

t.test('official SDK 1.x server over HTTP: legacy, SSE resumption with Last-Event-ID', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK1);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url });
  t.equal(c.era, 'legacy');
  t.same(c.info.serverInfo, { name: 'albedo-fixture-sdk1', version: '1.0.0' });
  t.equal((await c.callTool('echo', { text: 'old' })).content[0].text, 'old');
  const posts = srv.log.filter((l) => l.http === 'POST');
  t.ok(
    posts.length >= 3 && posts.slice(2).every((l) => typeof l.session === 'string' && l.version === '2025-11-25'),
    'session id and version on every request after initialize',
  );
  // The server closes the tool's SSE stream and answers later: the client resumes it.
  t.equal((await c.callTool('poll', { ms: 300 })).content[0].text, 'answered after 300 ms');
  t.ok(
    srv.log.some((l) => l.http === 'GET' && typeof l.lastEventId === 'string'),
    'a GET with Last-Event-ID resumed the stream',
  );
  await c.close();
  await until(() => srv.log.some((l) => l.http === 'DELETE'), 5_000, 'DELETE of the session');
  t.pass('close sent DELETE with the session id');
});

t.test('legacy server requests are answered by the embedder handlers', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK1);
  const seen: string[] = [];
  const a = await albedoFor(t, tag, {
    handlers: {
      elicitation: (p) => {
        seen.push(`elicit:${String(p.message)}`);
        return { action: 'accept', content: { name: 'Ada' } };
      },
      sampling: () => ({ role: 'assistant', content: { type: 'text', text: 'hi there' }, model: 'stand-in', stopReason: 'endTurn' }),
      roots: () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }),
    },
  });
  const c = await a.connect({ url: srv.url });
  t.equal((await c.callTool('ask')).content[0].text, 'hello Ada');
  t.same(seen, ['elicit:Your name?']);
  t.equal((await c.callTool('sample')).content[0].text, 'model said: hi there');
  t.equal((await c.callTool('roots')).content[0].text, 'file:///work');
});

t.test('without handlers nothing is declared and a server asking for input gets -32601', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK1);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url });
  const r = await c.callTool('ask');
  t.equal(r.isError, true, 'the server reports the failed elicitation as a tool error');
});

t.test('MRTR: input_required is fulfilled by the handler and retried with the exact requestState', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'dual']);
  const asked: unknown[] = [];
  const a = await albedoFor(t, tag, {
    handlers: {
      elicitation: (p) => {
        asked.push(p);
        return { action: 'accept', content: { confirm: true } };
      },
    },
  });
  const c = await a.connect({ url: srv.url });
  t.equal((await c.callTool('confirm', { what: 'deploy' })).content[0].text, 'deploy: confirmed');
  t.match(asked, [{ message: 'Really deploy?', requestedSchema: { type: 'object' } }]);
  // A per-connection handler overrides the instance's.
  const c2 = await a.connect({ url: srv.url }, { handlers: { elicitation: () => ({ action: 'accept', content: { confirm: false } }) } });
  t.equal((await c2.callTool('confirm', { what: 'drop' })).content[0].text, 'drop: refused');
});

t.test('MRTR without handlers is ALBEDO_INPUT_REQUIRED and nothing runs', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'modern']);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url });
  const e = await rejection(c.callTool('confirm', { what: 'deploy' }));
  t.equal(e.code, 'ALBEDO_INPUT_REQUIRED');
  t.equal(e.outcome, 'not_run');
  t.match(e.message, /elicitation/);
});

t.test('the era verdict is cached per server config', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK1);
  const home = tempHome(t);
  const a = await albedoFor(t, tag, { home });
  const c1 = await a.connect({ url: srv.url });
  t.equal(c1.info.detection, 'probe');
  const before = srv.log.length;
  const c2 = await a.connect({ url: srv.url });
  t.equal(c2.era, 'legacy');
  t.equal(c2.info.detection, 'cached');
  const first = srv.log[before];
  t.equal(first?.version, undefined, 'the cached legacy verdict starts with initialize (no discover probe)');
});

t.test('bearer token from a named variable, and a custom header', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'dual', '--bearer', 's3cret-token']);
  const a = await albedoFor(t, tag);
  // Without a token a 401 asks for a sign-in (the server wants OAuth, as far as Albedo can tell).
  const denied = await rejection(a.connect({ url: srv.url, startupTimeoutMs: 5_000 }));
  t.equal(denied.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal(denied.outcome, 'not_run');
  t.match(denied.data, { reason: 'not_signed_in' });
  // A fixed Authorization that the server refuses is an HTTP error: there is nothing to sign in to.
  process.env.ALBEDO_TEST_BEARER = 'wrong-token';
  const wrong = await rejection(a.connect({ url: srv.url, bearerTokenEnvVar: 'ALBEDO_TEST_BEARER', startupTimeoutMs: 5_000 }));
  t.equal(wrong.code, 'ALBEDO_HTTP_ERROR');
  t.match(wrong.data, { status: 401 });
  t.notMatch(wrong.message, /wrong-token/, 'the token is not in the message');
  process.env.ALBEDO_TEST_BEARER = 's3cret-token';
  t.teardown(() => {
    delete process.env.ALBEDO_TEST_BEARER;
  });
  const c = await a.connect({ url: srv.url, bearerTokenEnvVar: 'ALBEDO_TEST_BEARER', headers: { 'X-Fixture-Probe': 'yes' } });
  t.equal((await c.callTool('echo', { text: 'authorised' })).content[0].text, 'authorised');
  const unset = await rejection(a.connect({ url: srv.url, bearerTokenEnvVar: 'ALBEDO_TEST_NOT_SET' }));
  t.equal(unset.code, 'ALBEDO_INVALID_CONFIG');
  t.notMatch(unset.message, /s3cret/);
});

t.test('bad HTTP configs are refused before any request', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ url: 'http://user:pw@127.0.0.1:1/mcp' }, /user name or password/],
    [{ url: 'http://127.0.0.1:1/mcp#frag' }, /fragment/],
    [{ url: 'ws://127.0.0.1:1/mcp' }, /http or https/],
    [{ url: 'not a url' }, /not a URL/],
    [
      { url: 'http://127.0.0.1:1/mcp', headers: { 'Mcp-Session-Id': 'x' } },
      /headers\.Mcp-Session-Id: bad key: Albedo sets this header itself/,
    ],
    [{ url: 'http://127.0.0.1:1/mcp', headers: { 'Bad Header': 'x' } }, /header name/],
    [{ url: 'http://127.0.0.1:1/mcp', headers: { 'X-A': 'a\r\nInjected: 1' } }, /line break/],
    [
      { url: 'http://127.0.0.1:1/mcp', bearerTokenEnvVar: 'X', headers: { Authorization: 'x' } },
      /either bearerTokenEnvVar or an Authorization header/,
    ],
  ];
  for (const [cfg, re] of cases) {
    const e = await rejection(a.connect(cfg as never));
    t.equal(e.code, 'ALBEDO_INVALID_CONFIG', JSON.stringify(cfg));
    t.match(e.message, re);
  }
});

t.test('a server that is not there fails as not run', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const e = await rejection(a.connect({ url: 'http://127.0.0.1:1/mcp', startupTimeoutMs: 5_000 }));
  t.equal(e.code, 'ALBEDO_CONNECTION_CLOSED');
  t.equal(e.outcome, 'not_run');
  t.match(e.message, /ECONNREFUSED/);
});

t.test('modern: list changes arrive on the held subscriptions/listen and refresh the catalogue', async (t) => {
  const tag = newTag();
  const srv = await httpFixture(t, tag, SDK2, ['--mode', 'modern']);
  const a = await albedoFor(t, tag);
  const c = await a.connect({ url: srv.url });
  t.notOk(c.catalogue.tools.some((x) => x.name === 'late_tool'));
  const changed = new Promise<string[]>((resolve) =>
    c.on('catalogue', (cat) => {
      if (cat.tools.some((x) => x.name === 'late_tool')) resolve(cat.tools.map((x) => x.name));
    }),
  );
  t.equal((await c.callTool('add_tool')).content[0].text, 'added');
  t.ok((await changed).includes('late_tool'), 'the new tool appeared through the listen stream');
  t.equal((await c.callTool('late_tool')).content[0].text, 'late');
});
