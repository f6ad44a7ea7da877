// Issue 20 item 1, the review's gaps for OAuth: the access and refresh
// tokens an HTTP link uses are secrets of its connection (its peer's error
// messages and data, its warnings, its failures), and a token endpoint that
// echoes the client secret it was sent in error_description does not put it
// in the sign-in error, which stays short.
import t, { type Test } from 'tap';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Connection } from '../../services/transport/connection.ts';
import { FileCredsStore } from '../../services/oauth/store.ts';
import { LinkAuth } from '../../services/oauth/link-auth.ts';
import { AlbedoError } from '../../protocol/errors.ts';

t.setTimeout(60_000);

const AT = 'eyJhbGciOiJFUzI1NiJ9.ACCESS/TOKEN+PAYLOAD.sig';
const RT = 'RT0-refresh/token+xyz-0123';
const CLIENT_SECRET = 'cs_live_9f8e/7d6c+5b4a3210ZYXW';

/** Every piece of `secret` (as given, JSON-escaped, URL-encoded) at least four characters long that `text` holds. */
function pieces(text: string, secret: string): string[] {
  const found = new Set<string>();
  for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]) {
    for (let i = 0; i + 4 <= form.length; i++) if (text.includes(form.slice(i, i + 4))) found.add(form.slice(i, i + 4));
  }
  return [...found];
}

async function listen(t: Test, handler: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void): Promise<string> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => handler(req, body, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r(undefined)));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const json = (res: http.ServerResponse, o: unknown, status = 200): void => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(o));
};

t.test('an MCP server that echoes the OAuth tokens: not in its errors, their data, nor the warnings', async (t) => {
  const base = await listen(t, (req, body, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const m = JSON.parse(body) as { id?: number; method: string };
    if (m.id === undefined) return void res.writeHead(202).end();
    const auth = String(req.headers.authorization ?? '');
    if (m.method === 'initialize') {
      return json(res, {
        jsonrpc: '2.0',
        id: m.id,
        result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'x', version: '1' } },
      });
    }
    if (m.method === 'tools/list') {
      // A notification that is not an MCP one (a warning quotes its method), then the answer.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: `debug ${auth} ${RT}` })}\n\n`);
      return void res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools: [] } })}\n\n`);
    }
    const sent = `${'x'.repeat(990)}${auth} ${encodeURIComponent(AT)} ${RT}`;
    json(res, { jsonrpc: '2.0', id: m.id, error: { code: -32000, message: sent, data: { sent, [AT]: RT } } });
  });
  const url = `${base}/mcp`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-oauth-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'creds.json');
  const now = Date.now();
  await new FileCredsStore(file).update('m', url, () => ({
    record: {
      url,
      state: 'signed_in',
      updatedAt: 0,
      issuer: base,
      authServer: {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        code_challenge_methods_supported: ['S256'],
      },
      client: { issuer: base, clientId: 'c', authMethod: 'none', kind: 'dcr', registeredAt: now },
      tokens: {
        accessToken: AT,
        refreshToken: RT,
        tokenType: 'Bearer',
        issuer: base,
        obtainedAt: now,
        expiresAt: now + 3_600_000,
        resource: url,
      },
    } as never,
    value: undefined,
  }));
  const events: unknown[] = [];
  const server = {
    type: 'http',
    url,
    headers: {},
    startupTimeoutMs: 10_000,
    callTimeoutMs: 10_000,
    fingerprint: 'f',
    auth: { name: 'm', credsPath: file, oauth: { grant: 'authorization_code', dpop: false, callbackPort: 0 } },
  } as never;
  const conn = new Connection('c1', server, { name: 'test', version: '0' }, null, (name, payload) => events.push([name, payload]));
  t.teardown(() => conn.close());
  const opened = await conn.open();
  let err: unknown;
  try {
    await conn.request({ method: 'tools/call', name: 'x' }, 10_000);
  } catch (e) {
    err = e;
  }
  t.ok(AlbedoError.is(err) && err.code === 'ALBEDO_SERVER_ERROR', 'the call failed on the server');
  const shown = JSON.stringify({ warnings: opened.warnings, events, err: (err as AlbedoError).toJSON() });
  t.ok(events.length > 0, 'the notification was warned of');
  t.same(pieces(shown, AT), [], 'no piece of the access token');
  t.same(pieces(shown, RT), [], 'no piece of the refresh token');
});

t.test('a token endpoint that echoes the client secret: not in the sign-in error, which is short', async (t) => {
  const base: string = await listen(t, (req, body, res) => {
    if (req.url === '/.well-known/oauth-protected-resource/mcp')
      return json(res, { resource: `${base}/mcp`, authorization_servers: [base] });
    if (req.url === '/.well-known/oauth-authorization-server') {
      return json(res, {
        issuer: base,
        authorization_endpoint: `${base}/a`,
        token_endpoint: `${base}/token`,
        grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_post'],
      });
    }
    if (req.url === '/token') {
      const got = new URLSearchParams(body).get('client_secret') ?? '';
      const said = `${'d'.repeat(290)} got ${got}, sent as ${encodeURIComponent(got)}; ${'e'.repeat(20_000)}`;
      return json(res, { error: 'invalid_client', error_description: said }, 401);
    }
    res.writeHead(404).end();
  });
  const auth = new LinkAuth(
    {
      name: 'm',
      credsPath: null,
      oauth: { grant: 'client_credentials', clientId: 'svc', clientSecret: CLIENT_SECRET, dpop: false, callbackPort: 0 },
    } as never,
    `${base}/mcp`,
  );
  let err: unknown;
  try {
    await auth.onChallenge(
      { status: 401, wwwAuthenticate: 'Bearer', dpopNonce: undefined, sentToken: undefined, request: { renewed: false } },
      0,
    );
  } catch (e) {
    err = e;
  }
  t.ok(AlbedoError.is(err), 'the sign-in failed');
  const shown = JSON.stringify((err as AlbedoError).toJSON());
  t.same(pieces(shown, CLIENT_SECRET), [], 'no piece of the client secret');
  t.ok((err as AlbedoError).message.length < 1_000, "the server's text is bounded");
});
