/**
 * `albedo gateway NAME`, `--server NAME` and `--session ID`: a stdio MCP
 * server for hosts that spawn a command (Claude Desktop, Claude Code,
 * Cursor…). It finds or starts the daemon as every command does, upgrades
 * one request to `/mcp/gateways/NAME/stdio` (or `/mcp/servers/NAME/stdio`,
 * `/mcp/sessions/ID/stdio`)
 * and then only copies bytes: stdin to the daemon, the daemon to stdout. It
 * never parses MCP and never loads the kernel, so a host that restarts it
 * pays a process start and one loopback connection; the session behind the
 * gateway, its servers and their saved catalogue stay in the daemon.
 *
 * Nothing but MCP goes to stdout (a host reads it as the protocol); news and
 * errors go to stderr. stdin's end is passed on (the daemon ends the
 * connection); the daemon's end ends the command (status 0), and a
 * connection lost any other way is status 3.
 */
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { Client } from '../client/client.ts';
import { CliError, EXIT, exitFor, errorLine } from '../client/errors.ts';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export interface GatewayStdioOptions {
  /** A gateway defined in extensions.json. */
  name?: string;
  /** Or one configured server passed through under its own names. */
  server?: string;
  /** Or an ACP session's gateway (what `albedo acp` gives its agent). */
  session?: string;
}

const UPGRADE = 'albedo-mcp-stdio';

function pathOf(o: GatewayStdioOptions): string {
  if (o.server !== undefined) return `/mcp/servers/${encodeURIComponent(o.server)}/stdio`;
  if (o.session !== undefined) return `/mcp/sessions/${encodeURIComponent(o.session)}/stdio`;
  return `/mcp/gateways/${encodeURIComponent(o.name ?? '')}/stdio`;
}

/** The upgraded socket, or the daemon's refusal as a CliError. */
function upgrade(port: number, token: string, path: string): Promise<{ socket: Socket; head: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path,
      method: 'GET',
      // Its own connection: never the global agent, which NODE_USE_ENV_PROXY points at HTTP_PROXY (the token is in it).
      agent: false,
      headers: { connection: 'Upgrade', upgrade: UPGRADE, authorization: `Bearer ${token}`, host: `127.0.0.1:${port}` },
    });
    req.once('upgrade', (_res, socket, head) => resolve({ socket: socket as Socket, head }));
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.length < 64 && chunks.push(c));
      res.once('end', () => {
        let code = 'ALBEDO_INTERNAL';
        let message = `the daemon refused the gateway (HTTP ${res.statusCode})`;
        try {
          const e = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: { code?: string; message?: string } }).error;
          if (e?.code) code = e.code;
          if (e?.message) message = e.message;
        } catch {
          /* not the API's body: the status says it */
        }
        reject(new CliError(code, message, exitFor(res.statusCode ?? 500, code)));
      });
    });
    req.once('error', (err: NodeJS.ErrnoException) =>
      reject(new CliError('ALBEDO_DAEMON_UNREACHABLE', `cannot reach the daemon (${err.code ?? 'no answer'})`, EXIT.unreachable)),
    );
    req.end();
  });
}

/** Relays stdin/stdout to the daemon's gateway until either side ends; resolves with the exit status. */
export async function runGatewayStdio(o: GatewayStdioOptions): Promise<number> {
  let link: { socket: Socket; head: Buffer };
  try {
    const info = await new Client().daemon();
    link = await upgrade(info.port, info.token, pathOf(o));
  } catch (err) {
    const e = err instanceof CliError ? err : new CliError('ALBEDO_INTERNAL', (err as Error).message, EXIT.failed);
    process.stderr.write(errorLine(e) + '\n');
    return e.exit;
  }
  const { socket, head } = link;
  socket.setNoDelay(true);
  if (head.length) process.stdout.write(head);
  return new Promise<number>((resolve) => {
    let ended = false;
    socket.pipe(process.stdout, { end: false });
    process.stdin.pipe(socket);
    // The host closed our stdin: the daemon is told (half-close) and ends the connection once it answered what it had.
    process.stdin.once('end', () => (ended = true));
    socket.once('close', () => {
      process.stdin.unpipe(socket);
      process.stdin.pause();
      resolve(ended ? EXIT.ok : socket.readableEnded ? EXIT.ok : EXIT.unreachable);
    });
    socket.once('error', () => {});
  });
}
