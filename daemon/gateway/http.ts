/**
 * One gateway over Streamable HTTP (`/mcp/gateways/{name}`), both eras, as
 * the SDK's own pattern serves them side by side:
 *
 * - 2026-07-28 (a request carrying the per-request `_meta` claim):
 *   `createMcpHandler(…, { legacy: 'reject' })`, a fresh server per request,
 *   `subscriptions/listen` streams fed by its `notify` (list_changed);
 * - 2025-era (`isLegacyRequest`): a session per `initialize`
 *   (`Mcp-Session-Id`), each a `WebStandardStreamableHTTPServerTransport`
 *   with its own server: POST, the GET stream, DELETE, and resumption from
 *   an in-memory event store (`Last-Event-ID`). A request naming a session
 *   that is gone is 404, as the spec says, so the client starts a new one.
 *
 * Host, Origin and the token were checked before (daemon/guard.ts); the
 * SDK's own handlers are validation-free.
 */
import { randomUUID } from 'node:crypto';
import {
  createMcpHandler,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import type { GatewayBackend, ListKind } from './backend.ts';
import { clientName, counted, ClientTable } from './clients.ts';
import { EventStoreMemory } from './event-store.ts';
import { gatewayServer, notifyListChanged, type Subscribers } from './mcp-server.ts';
import { Relays } from './relay.ts';

/** The largest request body a gateway reads (a tool call's arguments). */
export const MAX_GATEWAY_BODY = 16 * 1024 * 1024;
/** How soon a 2025-era client whose SSE stream closed reconnects (the `retry` field of the priming event). */
const SSE_RETRY_MS = 1_000;
/** 2025-era sessions kept per gateway; past this the least recently used one is closed. */
const MAX_SESSIONS = 128;

interface LegacySession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: ReturnType<typeof gatewayServer>;
  used: number;
  done(): void;
}

export class GatewayHttp {
  #backend: GatewayBackend;
  #clients: ClientTable;
  #modern: McpHttpHandler;
  #sessions = new Map<string, LegacySession>();
  #off: () => void;
  #closed = false;
  #relays = new Relays();

  #subscribers: Subscribers;

  constructor(backend: GatewayBackend, clients: ClientTable, subscribers: Subscribers) {
    this.#subscribers = subscribers;
    this.#backend = backend;
    this.#clients = clients;
    this.#modern = createMcpHandler(
      async () => {
        await backend.prepare();
        const schemas = await backend.toolSchemas();
        const mcp = gatewayServer(
          backend,
          {
            called: () => counted(clients.stateless(clientName(mcp.server.getClientVersion()), '2026-07-28')),
            relays: this.#relays,
          },
          schemas,
        );
        return mcp;
      },
      { legacy: 'reject', maxRequestBodySize: MAX_GATEWAY_BODY },
    );
    this.#off = backend.onListChanged((kind) => this.#changed(kind));
  }

  #changed(kind: ListKind): void {
    if (kind === 'tools') this.#modern.notify.toolsChanged();
    else if (kind === 'resources') this.#modern.notify.resourcesChanged();
    else this.#modern.notify.promptsChanged();
    for (const s of this.#sessions.values()) notifyListChanged(s.server.server, kind);
  }

  /** Answers one request of this gateway. */
  async fetch(req: Request): Promise<Response> {
    if (this.#closed) return Response.json({ error: { code: 'ALBEDO_CLOSED', message: 'the gateway is closing' } }, { status: 503 });
    if (!(await isLegacyRequest(req, undefined, { maxRequestBodySize: MAX_GATEWAY_BODY }))) return this.#modern.fetch(req);
    const sid = req.headers.get('mcp-session-id');
    if (sid !== null) {
      const s = this.#sessions.get(sid);
      if (!s) return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }, { status: 404 });
      s.used = Date.now();
      return s.transport.handleRequest(req);
    }
    // No session yet: a transport of its own answers (an initialize starts a session; anything else is its 400).
    const s = await this.#open();
    const res = await s.transport.handleRequest(req);
    // One that did not become a session (its first request was not an initialize) is dropped once it answered.
    if (!s.transport.sessionId) {
      s.done();
      void s.server.close().catch(() => {});
    }
    return res;
  }

  async #open(): Promise<LegacySession> {
    await this.#backend.prepare();
    const row = this.#clients.open('http', 'legacy');
    let session: LegacySession | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new EventStoreMemory(),
      // A client whose stream the server closes (SSE polling) is told when to come back.
      retryInterval: SSE_RETRY_MS,
      maxRequestBodySize: MAX_GATEWAY_BODY,
      onsessioninitialized: (id) => {
        if (!session) return;
        this.#sessions.set(id, session);
        this.#trim();
      },
      onsessionclosed: (id) => this.#forget(id),
    });
    const mcp = gatewayServer(this.#backend, { called: () => counted(row.row), subscribers: this.#subscribers });
    const server = mcp.server;
    server.oninitialized = () => {
      row.row.name = clientName(server.getClientVersion());
      row.row.era = server.getNegotiatedProtocolVersion() ?? 'legacy';
    };
    transport.onclose = () => {
      row.done();
      this.#subscribers.drop(server);
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
    };
    session = { transport, server: mcp, used: Date.now(), done: row.done };
    await mcp.connect(transport);
    return session;
  }

  #forget(id: string): void {
    const s = this.#sessions.get(id);
    if (!s) return;
    this.#sessions.delete(id);
    s.done();
  }

  #trim(): void {
    while (this.#sessions.size > MAX_SESSIONS) {
      let oldest: [string, LegacySession] | undefined;
      for (const e of this.#sessions) if (!oldest || e[1].used < oldest[1].used) oldest = e;
      if (!oldest) return;
      this.#sessions.delete(oldest[0]);
      oldest[1].done();
      void oldest[1].server.close().catch(() => {});
    }
  }

  /** Ends every session and stream (the gateway was removed or redefined, or the daemon stops). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#off();
    this.#relays.close();
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(all.map((s) => s.server.close().catch(() => {})));
    await this.#modern.close();
  }
}
