/**
 * A loopback reverse proxy that adds `Authorization: Bearer <token>` to every
 * request: the conformance suite's server scenarios send no Authorization
 * header and have no option or variable for one, so a server behind a bearer
 * token (Albedo's gateway) is tested through this.
 *
 *   ALBEDO_PROXY_TOKEN=… node test/conformance/auth-proxy.ts --target http://127.0.0.1:PORT/mcp
 *
 * prints `listening <url>` (the target's path on the proxy's origin) and runs
 * until its stdin ends. Bodies stream both ways as they come (SSE included),
 * statuses and headers pass unchanged. A Host or Origin naming the proxy
 * itself (a loopback name with the proxy's port) is said as the target's, as
 * a client of the target would send it; any other (the dns-rebinding
 * scenario's foreign names) reaches the target as the client sent it.
 */
import http from 'node:http';
import https from 'node:https';

/** Connection-level headers, which belong to each hop and are not forwarded. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

function forwardable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
  return out;
}

export interface AuthProxy {
  /** The target URL's path on the proxy: what to hand the suite as `--url`. */
  url: string;
  close(): Promise<void>;
}

export async function startAuthProxy(options: { target: string; token: string }): Promise<AuthProxy> {
  const target = new URL(options.target);
  const client = target.protocol === 'https:' ? https : http;
  let own = '';
  const loopback = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;
  const retarget = (hostPort: string): string => {
    const m = loopback.exec(hostPort);
    return m && m[2] === `:${own}` ? `${m[1]}:${target.port}` : hostPort;
  };
  const server = http.createServer((req, res) => {
    const headers = { ...forwardable(req.headers), authorization: `Bearer ${options.token}` };
    if (typeof headers.host === 'string') headers.host = retarget(headers.host);
    if (typeof headers.origin === 'string' && /^http:\/\//.test(headers.origin)) {
      headers.origin = `http://${retarget(headers.origin.slice('http://'.length))}`;
    }
    const upstream = client.request(new URL(req.url ?? '/', target), { method: req.method, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, forwardable(up.headers));
      // Sent now, so that an SSE stream's client sees the response before its first event.
      res.flushHeaders();
      up.pipe(res);
      up.on('error', () => res.destroy());
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`auth-proxy: ${err.message}`);
      else res.destroy();
    });
    // A client that goes away (a closed SSE stream) takes its upstream request with it.
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  own = String(port);
  return {
    url: `http://127.0.0.1:${port}${target.pathname}${target.search}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--target');
  const target = at >= 0 ? argv[at + 1] : undefined;
  const token = process.env.ALBEDO_PROXY_TOKEN;
  if (!target || !token) {
    process.stderr.write('usage: ALBEDO_PROXY_TOKEN=TOKEN node test/conformance/auth-proxy.ts --target URL\n');
    process.exit(2);
  }
  const proxy = await startAuthProxy({ target, token });
  process.stdout.write(`listening ${proxy.url}\n`);
  process.stdin.on('end', () => void proxy.close().then(() => process.exit(0)));
  process.stdin.resume();
}
