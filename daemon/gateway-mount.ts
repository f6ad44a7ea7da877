/**
 * The gateways on the daemon's HTTP server: a request to
 * `/mcp/gateways/{name}` (guarded before: Host, Origin, the daemon's or the
 * gateway's token) goes to its GatewayHttp; an upgrade to
 * `/mcp/gateways/{name}/stdio` or `/mcp/servers/{server}/stdio` (the
 * daemon's token only) becomes a stdio connection (stdio.ts). An ACP
 * session's gateway (`/mcp/sessions/{id}`, `…/stdio`) is served the same way.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { AlbedoError } from '../protocol/errors.ts';
import { ApiError } from './errors.ts';
import type { GatewayTarget, Gateways } from './gateway/gateways.ts';
import type { GatewayHttp } from './gateway/http.ts';
import { serveSocket, STDIO_UPGRADE } from './gateway/stdio.ts';

const notFound = (what: string): ApiError =>
  new ApiError(404, 'ALBEDO_NOT_FOUND', what === 'ACP session' ? 'no ACP session has this id' : `no ${what} of that name is configured`);

function failure(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (AlbedoError.is(err) && err.code === 'ALBEDO_CLOSED') return new ApiError(503, 'ALBEDO_CLOSED', 'the daemon is stopping');
  if (AlbedoError.is(err) && err.code === 'ALBEDO_INVALID_CONFIG')
    return new ApiError(409, 'ALBEDO_INVALID_CONFIG', 'the settings cannot be resolved for this gateway');
  return new ApiError(500, 'ALBEDO_INTERNAL', 'the gateway could not be opened');
}

/** The handler of `/mcp/gateways/{name}` requests. */
export function gatewayListener(gateways: Gateways): (req: http.IncomingMessage, res: http.ServerResponse, name: string) => void {
  return listenerOf((name) => gateways.http(name), 'gateway');
}

/** The handler of `/mcp/sessions/{id}` requests (an ACP session's gateway). */
export function sessionListener(gateways: Gateways): (req: http.IncomingMessage, res: http.ServerResponse, id: string) => void {
  return listenerOf((id) => gateways.sessionHttp(id), 'ACP session');
}

function listenerOf(
  open: (name: string) => Promise<GatewayHttp | null>,
  what: string,
): (req: http.IncomingMessage, res: http.ServerResponse, name: string) => void {
  const byName = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>();
  const listen = async (req: http.IncomingMessage, res: http.ServerResponse, name: string): Promise<void> => {
    try {
      const gw = await open(name);
      if (!gw) throw notFound(what);
      let l = byName.get(name);
      if (!l || (l as { gw?: unknown }).gw !== gw) {
        l = Object.assign(
          getRequestListener((r) => gw.fetch(r), { overrideGlobalObjects: false }),
          { gw },
        );
        byName.set(name, l);
      }
      l(req, res);
    } catch (err) {
      const e = failure(err);
      if (!res.headersSent) res.writeHead(e.status, { 'content-type': 'application/json' }).end(JSON.stringify(e.body()));
    }
  };
  return (req, res, name) => void listen(req, res, name);
}

/**
 * Refuses an upgrade with an HTTP answer on the raw socket, then closes it: an upgrade's socket is out of Node's HTTP
 * server (no timeout, not closed by closeAllConnections), so a client that keeps its half open after our end would hold
 * it — and the daemon's process, after a stop — for as long as it likes.
 */
export function refuseUpgrade(socket: Duplex, e: ApiError): void {
  const body = JSON.stringify(e.body());
  socket.end(
    `HTTP/1.1 ${e.status} ${e.status === 404 ? 'Not Found' : 'Refused'}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/** Serves an upgrade already past the guard, for `target`. */
export async function gatewayUpgrade(gateways: Gateways, req: http.IncomingMessage, socket: Duplex, head: Buffer, target: GatewayTarget) {
  if ((req.headers.upgrade ?? '').toLowerCase() !== STDIO_UPGRADE) {
    return refuseUpgrade(socket, new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `only Upgrade: ${STDIO_UPGRADE} is served`));
  }
  let live;
  try {
    live = await gateways.backend(target);
    if (!live) throw notFound('gateway' in target ? 'gateway' : 'server' in target ? 'server' : 'ACP session');
  } catch (err) {
    return refuseUpgrade(socket, failure(err));
  }
  if (socket.destroyed) return;
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: ${STDIO_UPGRADE}\r\nconnection: Upgrade\r\n\r\n`);
  if (head.length) socket.unshift(head);
  gateways.track(target, socket);
  serveSocket(socket, live.backend, live.clients, live.subscribers);
}
