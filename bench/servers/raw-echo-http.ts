// The raw echo server (raw-echo.ts) over Streamable HTTP: a minimal hand-written server on 127.0.0.1, so that
// rows against it measure what stands between the client and it. Stateless in both eras: a 2026-07-28 request
// (its MCP-Protocol-Version header) is answered with the modern result shape, anything else as 2025-era JSON;
// no session id, GET and DELETE are 405. Every answer is one JSON body (no event stream).
// Prints `listening <url>` on stdout once it accepts connections; exits when stdin ends.
import http from 'node:http';

const MODERN = '2026-07-28';
const tools = [
  { name: 'echo', description: 'Echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'big', description: 'A text of N bytes', inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } } } },
];
const serverInfo = { name: 'raw-echo-http', version: '1' };

type Msg = { id?: string | number; method?: string; params?: Record<string, unknown> };

function answer(m: Msg, modern: boolean): unknown {
  const ok = (result: Record<string, unknown>) => ({
    jsonrpc: '2.0',
    id: m.id,
    result: modern ? { resultType: 'complete', ...result } : result,
  });
  const cache = modern ? { ttlMs: 0, cacheScope: 'private' } : {};
  switch (m.method) {
    case 'server/discover':
      return ok({
        supportedVersions: [MODERN],
        capabilities: { tools: {} },
        ...cache,
        _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo },
      });
    case 'initialize':
      return ok({ protocolVersion: String(m.params?.protocolVersion ?? '2025-11-25'), capabilities: { tools: {} }, serverInfo });
    case 'tools/list':
      return ok({ tools, ...cache });
    case 'tools/call': {
      const args = (m.params?.arguments ?? {}) as { text?: string; bytes?: number };
      const text = m.params?.name === 'big' ? 'x'.repeat(Number(args.bytes ?? 0)) : String(args.text ?? '');
      return ok({ content: [{ type: 'text', text }] });
    }
    case 'ping':
      return ok({});
    default:
      return { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } };
  }
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let m: Msg;
    try {
      m = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Msg;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
      return;
    }
    if (m.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const body = JSON.stringify(answer(m, req.headers['mcp-protocol-version'] === MODERN));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`listening http://127.0.0.1:${port}/mcp\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
