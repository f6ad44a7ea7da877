// The REST bridge (daemon/rest-bridge.ts): `/mcp` on a real daemon is an MCP
// server with one tool, albedo_request, driven by real MCP clients — the official
// SDK client 2.x in the 2026-07-28 era and in the 2025 one, and the SDK 1.x client
// (initialize first). Every method reaches the API and comes back as the tool's
// result; an API error is a tool error with the API's code; a call the rules
// refuse, and listing the tools, send nothing to the API. Which requests reached
// the daemon is read from the daemon itself: a preload (test/fixtures/request-log.ts)
// logs each one from Node's http diagnostics channel, nothing in the daemon's code.
import t from 'tap';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fixture, newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon } from './harness.ts';

t.setTimeout(170_000);

const MODERN = '2026-07-28';

interface ToolResult {
  isError?: boolean;
  structuredContent?: any;
  content: Array<{ type: string; text?: string }>;
}

/** One MCP client of the bridge, whichever SDK and era. */
interface Peer {
  era: string | undefined;
  listTools(): Promise<Array<{ name: string; inputSchema: any }>>;
  call(args: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

const url = (d: Daemon): URL => new URL(`http://127.0.0.1:${d.info.port}/mcp`);
const auth = (d: Daemon, token = d.info.token) => ({ headers: { authorization: `Bearer ${token}` } });

async function sdk2(d: Daemon, mode: 'modern' | 'legacy', token?: string): Promise<Peer> {
  const client = new Client2(
    { name: 'bridge-test', version: '1.0.0' },
    { versionNegotiation: { mode: mode === 'modern' ? { pin: MODERN } : 'legacy' } },
  );
  await client.connect(new Transport2(url(d), { requestInit: auth(d, token) }));
  return {
    era: client.getNegotiatedProtocolVersion(),
    listTools: async () => (await client.listTools()).tools as any,
    call: async (args) => (await client.callTool({ name: 'albedo_request', arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}

async function sdk1(d: Daemon): Promise<Peer> {
  const client = new Client1({ name: 'bridge-test-v1', version: '1.0.0' });
  await client.connect(new Transport1(url(d), { requestInit: auth(d) }));
  return {
    era: (client as any).transport?.protocolVersion,
    listTools: async () => (await client.listTools()).tools as any,
    call: async (args) => (await client.callTool({ name: 'albedo_request', arguments: args })) as ToolResult,
    close: () => client.close(),
  };
}

/** The daemon's request log: `request-log: METHOD URL` lines of its stderr. */
class RequestLog {
  private n = 0;
  private d: Daemon;
  constructor(d: Daemon) {
    this.d = d;
  }
  /** Sends a marker request and waits for its line: every request before it is then in the log. */
  async mark(): Promise<number> {
    const tag = `mark=${++this.n}`;
    await this.d.call('GET', `/v1/health?${tag}`, { token: null });
    await until(() => this.d.lines.some((l) => l.endsWith(`?${tag}`)), 10_000, `the request log's ${tag}`);
    return this.d.lines.findIndex((l) => l.endsWith(`?${tag}`));
  }
  /** The API requests (not /mcp, not markers) logged between two marks. */
  between(from: number, to: number): string[] {
    return this.d.lines
      .slice(from + 1, to)
      .filter((l) => l.startsWith('request-log: '))
      .map((l) => l.slice('request-log: '.length))
      .filter((l) => !/^\S+ \/mcp(\?|$)/.test(l) && !/ \/v1\/health\?mark=\d+$/.test(l));
  }
  /** The API requests `fn` made reach the daemon. */
  async during(fn: () => Promise<unknown>): Promise<string[]> {
    const from = await this.mark();
    await fn();
    return this.between(from, await this.mark());
  }
}

const errorOf = (r: ToolResult): { status?: number; error?: { code?: string; path?: unknown } } => r.structuredContent ?? {};

t.test('the REST bridge', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag, env: { NODE_OPTIONS: `--import=${fixture('request-log.ts')}` } });
  const log = new RequestLog(d);

  t.test('/mcp takes only the daemon token: none, another, or the pane cookie alone → 401', async (t) => {
    const params = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } };
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params };
    const headers = { accept: 'application/json, text/event-stream' };
    const none = await d.call('POST', '/mcp', { body: init, headers, token: null });
    t.equal(none.status, 401, 'no token');
    t.equal(none.body?.error?.code, 'ALBEDO_UNAUTHORIZED');
    t.equal((await d.call('POST', '/mcp', { body: init, headers, token: 'not-the-token' })).status, 401, 'another token');
    // A live pane session: its cookie and CSRF token open /v1 but not /mcp.
    const link = (await d.call('POST', '/v1/ui/links')).body as { url: string };
    const u = new URL(link.url);
    const login = await d.call('GET', `${u.pathname}${u.search}`, { token: null });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const csrf = /#k=([\w-]+)$/.exec(String(login.headers.location))![1]!;
    const pane = { cookie, 'x-albedo-csrf': csrf, origin: `http://127.0.0.1:${d.info.port}` };
    t.equal((await d.call('GET', '/v1/mcp', { token: null, headers: pane })).status, 200, 'the cookie opens the API');
    t.equal((await d.call('POST', '/mcp', { body: init, headers: { ...headers, ...pane }, token: null })).status, 401, 'but not /mcp');
    await t.rejects(sdk2(d, 'modern', 'not-the-token'), 'a client with another token cannot connect');
    const ok = await d.call('POST', '/mcp', { body: init, headers });
    t.equal(ok.status, 200, 'the daemon token: served');
  });

  t.test('every era lists exactly one tool, and listing sends nothing to the API', async (t) => {
    for (const [what, open] of [
      ['SDK 2.x, 2026-07-28', () => sdk2(d, 'modern')],
      ['SDK 2.x, 2025 era', () => sdk2(d, 'legacy')],
      ['SDK 1.x (initialize first)', () => sdk1(d)],
    ] as const) {
      let peer!: Peer;
      let tools: Array<{ name: string; inputSchema: any }> = [];
      const made = await log.during(async () => {
        peer = await open();
        tools = await peer.listTools();
      });
      t.same(made, [], `${what}: no API request to connect and list`);
      if (what.includes(MODERN)) t.equal(peer.era, MODERN, `${what}: the modern era`);
      else t.match(peer.era, /^2025-/, `${what}: a 2025 era (${peer.era})`);
      t.same(
        tools.map((x) => x.name),
        ['albedo_request'],
        `${what}: one tool`,
      );
      t.same(tools[0]!.inputSchema.required, ['method', 'path'], `${what}: its schema`);
      t.same(tools[0]!.inputSchema.properties.method.enum, ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
      const r = await peer.call({ method: 'GET', path: '/v1/mcp' });
      t.notOk(r.isError, `${what}: a call`);
      t.equal(r.structuredContent.status, 200);
      t.type(r.structuredContent.body.retryMs, 'number', `${what}: the API's JSON body`);
      t.equal(r.content.length, 1, `${what}: one content block`);
      t.same(JSON.parse(r.content[0]!.text!), r.structuredContent, `${what}: the same as text`);
      const nf = await peer.call({ method: 'GET', path: srv('nobody') });
      t.ok(nf.isError, `${what}: a 404 is a tool error`);
      t.equal(errorOf(nf).status, 404);
      t.equal(errorOf(nf).error?.code, 'ALBEDO_NOT_FOUND', `${what}: with the API's code`);
      const bad = await peer.call({ method: 'GET', path: '//evil.example/v1/mcp' });
      t.equal(errorOf(bad).error?.code, 'ALBEDO_INVALID_ARGUMENT', `${what}: a refused path`);
      await peer.close();
    }
  });

  t.test('every method, each one REST request with the caller token', async (t) => {
    const peer = await sdk2(d, 'modern');
    t.teardown(() => peer.close());
    const one = async (args: Record<string, unknown>): Promise<ToolResult> => {
      let r!: ToolResult;
      const made = await log.during(async () => {
        r = await peer.call(args);
      });
      t.same(made, [`${args.method} ${args.path}`], `${args.method} ${args.path}: exactly one request, as given`);
      return r;
    };
    const get = await one({ method: 'GET', path: '/v1/mcp' });
    t.equal(get.structuredContent.status, 200);
    const put = await one({ method: 'PUT', path: srv('bridged'), body: sdkServer() });
    t.notOk(put.isError, 'PUT: saved');
    t.equal(put.structuredContent.status, 201);
    t.equal(put.structuredContent.body.saved, true);
    const patch = await one({ method: 'PATCH', path: srv('bridged'), body: { disabledTools: ['echo'] } });
    t.equal(patch.structuredContent.status, 200, 'PATCH');
    t.equal(patch.structuredContent.body.saved, true);
    const tools = await one({ method: 'GET', path: srv('bridged', '/tools') });
    t.same(
      tools.structuredContent.body.tools.filter((x: any) => !x.enabled).map((x: any) => x.name),
      ['echo'],
      'the PATCH took',
    );
    const head = await one({ method: 'HEAD', path: srv('bridged') });
    t.same(head.structuredContent, { status: 200 }, 'HEAD: a status, no body');
    const query = await one({ method: 'GET', path: '/v1/health?nonce=0123456789abcdef0123' });
    t.type(query.structuredContent.body.proof, 'string', 'a query string reaches the route');
    const post = await one({ method: 'POST', path: '/v1/sessions', body: { profile: 'anthropic' } });
    t.equal(post.structuredContent.status, 201, 'POST');
    const id = post.structuredContent.body.id as string;
    const events = await one({ method: 'GET', path: `/v1/sessions/${id}/events` });
    t.equal(errorOf(events).error?.code, 'ALBEDO_INVALID_ARGUMENT', 'an event stream is not waited on');
    const closed = await one({ method: 'DELETE', path: `/v1/sessions/${id}` });
    t.same(closed.structuredContent, { status: 204 }, 'DELETE a session: 204, no body');
    const del = await one({ method: 'DELETE', path: srv('bridged') });
    t.notOk(del.isError, 'DELETE a server');
    const gone = await one({ method: 'GET', path: srv('bridged') });
    t.equal(errorOf(gone).error?.code, 'ALBEDO_NOT_FOUND', 'it is gone');
    const invalid = await one({ method: 'PUT', path: srv('x'), body: { command: 3 } });
    t.ok(invalid.isError, "the API's 400 is a tool error");
    t.same(errorOf(invalid), { status: 400, error: errorOf(invalid).error }, 'with its status');
    t.equal(errorOf(invalid).error?.code, 'ALBEDO_INVALID_ARGUMENT');
    t.same((errorOf(invalid).error as any).path, ['body', 'command'], "and the API's path");
    const long = await one({ method: 'GET', path: '/v1/' + 'a'.repeat(4092) });
    t.equal(errorOf(long).status, 404, 'a path of 4,096 characters is sent');
  });

  t.test('a refused call sends nothing and names the field', async (t) => {
    const peer = await sdk2(d, 'modern');
    t.teardown(() => peer.close());
    const port = d.info.port;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ method: 'GET', path: `http://127.0.0.1:${port}/v1/mcp` }, 'path'],
      [{ method: 'GET', path: 'http://evil.example/v1/mcp' }, 'path'],
      [{ method: 'GET', path: '//evil.example/v1/mcp' }, 'path'],
      [{ method: 'GET', path: '/v1/health/../mcp/servers' }, 'path'],
      [{ method: 'GET', path: '/v1/%2e%2e/mcp' }, 'path'],
      [{ method: 'GET', path: '/v1%2fmcp' }, 'path'],
      [{ method: 'GET', path: '/v1%5cmcp' }, 'path'],
      [{ method: 'GET', path: '/v1/%252e%252e/mcp' }, 'path'],
      [{ method: 'GET', path: '/v1\\mcp' }, 'path'],
      [{ method: 'GET', path: '/' + 'a'.repeat(4096) }, 'path'],
      [{ method: 'POST', path: '/mcp', body: {} }, 'path'],
      [{ method: 'GET', path: '/ui/' }, 'path'],
      [{ method: 'OPTIONS', path: '/v1/mcp' }, 'method'],
      [{ method: 'get', path: '/v1/mcp' }, 'method'],
      [{ method: 'POST', path: '/v1/sessions', body: [] }, 'body'],
      [{ method: 'POST', path: '/v1/sessions', body: 'x' }, 'body'],
      [{ method: 'POST', path: '/v1/sessions', body: 3 }, 'body'],
      [{ method: 'POST', path: '/v1/sessions', body: null }, 'body'],
      [{ method: 'GET', path: '/v1/mcp', body: {} }, 'body'],
      [{ method: 'HEAD', path: '/v1/mcp', body: {} }, 'body'],
    ];
    const made = await log.during(async () => {
      for (const [args, field] of cases) {
        const r = await peer.call(args);
        const what = JSON.stringify(args).slice(0, 80);
        t.ok(r.isError, `${what}: a tool error`);
        t.equal(errorOf(r).error?.code, 'ALBEDO_INVALID_ARGUMENT', `${what}: ALBEDO_INVALID_ARGUMENT`);
        t.same(errorOf(r).error?.path, [field], `${what}: at ${field}`);
      }
    });
    t.same(made, [], 'not one request reached the API');
  });
});
