/**
 * Where the daemon serves MCP (docs/gateway.md), decided on the path as sent
 * (daemon/guard.ts's `requestPath`), before the API's router sees anything:
 *
 * - `/mcp`: the REST bridge (rest-bridge.ts), one tool over the daemon's own API, for the daemon's token;
 * - `/mcp/gateways/{name}`: a gateway over Streamable HTTP, for the daemon's token or one of that gateway's tokens;
 * - `/mcp/gateways/{name}/stdio`: the same gateway as a byte stream (an HTTP upgrade), for `albedo gateway NAME`;
 * - `/mcp/servers/{server}/stdio`: one configured server passed through (`albedo gateway --server NAME`), the
 *   daemon's token only; the server's name percent-encoded (server names may hold any character but a control one);
 * - `/mcp/sessions/{id}`: an ACP session's gateway over Streamable HTTP, for the daemon's token or that session's gateway
 *   token; `/mcp/sessions/{id}/stdio`: the same as a byte stream (`albedo gateway --session ID`), the daemon's token only.
 *
 * Anything else under `/mcp/` is the API's (its 404). A query string is ignored, as MCP clients add none.
 */
import { GATEWAY_NAME } from '../protocol/gateway.ts';

export type McpTarget =
  | { kind: 'bridge' }
  | { kind: 'gateway'; name: string }
  | { kind: 'stdio'; name: string }
  | { kind: 'server-stdio'; server: string }
  | { kind: 'session'; id: string }
  | { kind: 'session-stdio'; id: string };

export const BRIDGE_PATH = '/mcp';
export const GATEWAYS_PATH = '/mcp/gateways/';
export const SERVERS_PATH = '/mcp/servers/';
export const SESSIONS_PATH = '/mcp/sessions/';
/** A session id as the composer makes them (a UUID), or anything as plain. */
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function mcpTarget(path: string | null): McpTarget | null {
  if (path === null) return null;
  if (path === BRIDGE_PATH) return { kind: 'bridge' };
  if (path.startsWith(SERVERS_PATH)) {
    const [enc, rest, ...more] = path.slice(SERVERS_PATH.length).split('/');
    if (!enc || rest !== 'stdio' || more.length) return null;
    try {
      return { kind: 'server-stdio', server: decodeURIComponent(enc) };
    } catch {
      return null;
    }
  }
  if (path.startsWith(SESSIONS_PATH)) {
    const [id, rest, ...more] = path.slice(SESSIONS_PATH.length).split('/');
    if (!id || !SESSION_ID.test(id) || more.length) return null;
    if (rest === undefined) return { kind: 'session', id };
    return rest === 'stdio' ? { kind: 'session-stdio', id } : null;
  }
  if (!path.startsWith(GATEWAYS_PATH)) return null;
  const [name, rest, ...more] = path.slice(GATEWAYS_PATH.length).split('/');
  if (!name || !GATEWAY_NAME.test(name) || more.length) return null;
  if (rest === undefined) return { kind: 'gateway', name };
  return rest === 'stdio' ? { kind: 'stdio', name } : null;
}
