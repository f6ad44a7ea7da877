/**
 * A gateway as a byte stream, for `albedo gateway NAME` (and `--server
 * NAME`): the command upgrades one HTTP request to the daemon
 * (`Upgrade: albedo-mcp-stdio`) and from then on copies its stdin to the
 * socket and the socket to its stdout, so the command never parses MCP and
 * never loads the kernel. Here the socket is served as MCP's stdio binding
 * (newline-delimited JSON-RPC) by the SDK's `serveStdio`, which picks the era
 * from the opening (an `initialize`, or a 2026-07-28 `server/discover`) and
 * pins one server for the connection. The host killing the command only
 * closes the socket: the session behind the gateway and its servers stay.
 */
import type { Duplex } from 'node:stream';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { GatewayBackend } from './backend.ts';
import { clientName, counted, type ClientTable } from './clients.ts';
import { gatewayServer, notifyListChanged, type Subscribers } from './mcp-server.ts';
import { Relays } from './relay.ts';

export const STDIO_UPGRADE = 'albedo-mcp-stdio';
/** The largest message a stdio client may send (a tool call's arguments), as the HTTP form's body bound. */
const MAX_MESSAGE = 16 * 1024 * 1024;

/** Serves `socket` (already switched: the 101 was written) until either side closes it. */
export function serveSocket(socket: Duplex, backend: GatewayBackend, clients: ClientTable, subscribers: Subscribers): void {
  const row = clients.open('stdio', 'legacy');
  const relays = new Relays();
  let server: ReturnType<typeof gatewayServer> | undefined;
  const off = backend.onListChanged((kind) => {
    if (server) notifyListChanged(server.server, kind);
  });
  const transport = new StdioServerTransport(socket, socket, { maxBufferSize: MAX_MESSAGE });
  const handle = serveStdio(
    async (ctx) => {
      await backend.prepare();
      const s = gatewayServer(backend, { called: () => counted(row.row), relays, subscribers });
      row.row.era = ctx.era === 'modern' ? '2026-07-28' : 'legacy';
      s.server.oninitialized = () => {
        row.row.name = clientName(s.server.getClientVersion());
        row.row.era = s.server.getNegotiatedProtocolVersion() ?? row.row.era;
      };
      server = s;
      return s;
    },
    { transport },
  );
  let done = false;
  const end = (): void => {
    if (done) return;
    done = true;
    off();
    relays.close();
    if (server) subscribers.drop(server.server);
    row.done();
    void handle.close().catch(() => {});
    socket.destroy();
  };
  socket.once('close', end);
  socket.once('end', end);
  socket.once('error', end);
  // The SDK closes its transport on its own (a message over MAX_MESSAGE) without ending the socket: the host would wait
  // for an answer on a connection nobody reads any more. The connection ends with it, as a stdio server that exits.
  const closed = transport.onclose;
  transport.onclose = () => {
    closed?.();
    end();
  };
}
