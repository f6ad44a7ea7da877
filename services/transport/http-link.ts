/**
 * A Streamable HTTP link (MCP basic/transports/streamable-http, 2025-11-25
 * and 2026-07-28): every message is its own POST; the answer is a JSON body
 * or an SSE stream read until the request's response arrives. Like the stdio
 * link it knows messages, not JSON-RPC semantics: what it reads goes to
 * `onMessage`, and a request whose answer can no longer come is failed
 * through `onRequestFailed` with an honest outcome.
 *
 * Era-specific behaviour (set by the connection once negotiation decides):
 *  - modern: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
 *    `Mcp-Param-*` headers; no session; cancelling a request closes its
 *    stream; a broken stream loses the request (outcome unknown).
 *  - legacy: `Mcp-Session-Id` and the negotiated `MCP-Protocol-Version` on
 *    every request after `initialize`; a broken SSE response is resumed with
 *    `Last-Event-ID`; the optional GET stream; `DELETE` on close; a 404 for
 *    the session ends the link so the next request dials again.
 *
 * The modern headers are built by http-headers.ts, the OAuth ones by
 * http-auth.ts; notifications and answers to the server's requests are posted
 * by http-posts.ts; the legacy streams run in http-legacy.ts.
 */
import { Agent, request as undiciRequest, type Dispatcher } from 'undici';
import { AlbedoError } from '../../protocol/errors.ts';
import { MAX_MESSAGE_BYTES } from '../../protocol/framing.ts';
import type { RequestId } from '../../protocol/jsonrpc.ts';
import type { ResolvedHttpServer } from '../../protocol/config.ts';
import { Redactor, secretValues } from '../../protocol/redact.ts';
import { MODERN_VERSION } from '../../protocol/versions.ts';
import { mayPass } from '../../protocol/services/transport.ts';
import type { HeaderParam } from '../../protocol/rev2026-07-28/headers.ts';
import type { LinkAuth } from '../oauth/link-auth.ts';
import { headerOf, contentType, readCapped, excerptOf, describeNetError, statusData } from './http-util.ts';
import { readSse, newStreamState, MAX_BATCH, type StreamState, type SseSink } from './sse-reader.ts';
import { resumeResponse, holdGetStream, type LegacyHost } from './http-legacy.ts';
import { addModernHeaders } from './http-headers.ts';
import { authHeaders, authRetry, type AuthHeaders } from './http-auth.ts';
import { ERROR_BODY_BYTES, notifyAccepted, postInBackground, type PostHost } from './http-posts.ts';

/**
 * How long an idle keep-alive socket is reused when the server gives no `Keep-Alive: timeout` (the official SDK's
 * event-stream answers set `Connection: keep-alive` themselves, so Node sends none): under Node's own server default
 * of 5 s. A socket kept longer is one the server may close just as a request goes out on it — a reset that fails
 * the request with an unknown outcome (the soak's calls 5 s apart met it).
 */
const IDLE_SOCKET_MS = 4_000;

export type HttpEra = 'modern' | 'legacy';

export interface HttpLinkEvents {
  /**
   * One JSON-RPC message read from a response body or stream; `tag`: the progress token of the request whose POST
   * stream carried it (a server's own request there belongs to that call).
   */
  onMessage(message: unknown, raw: string, tag?: string): void;
  /** A request whose response can no longer arrive on this link. */
  onRequestFailed(id: RequestId, error: AlbedoError): void;
  /** Once, when the link is down for good; null after a requested close. */
  onClose(error: AlbedoError | null): void;
  /** Something worth telling the user that fails nothing (a refused notification, a GET stream given up). */
  onWarn(message: string): void;
  /** `Mcp-Param-*` headers for a tool call, from the tool's x-mcp-header annotations. */
  headerParams?(toolName: string): HeaderParam[] | undefined;
}

interface InFlight {
  id: RequestId;
  method: string;
  ac: AbortController;
  answered: boolean;
  /** Set once the request was cancelled or abandoned: nothing more is reported for it. */
  dropped: boolean;
  /** The request's progress token (its call's), which what arrives on its stream is tagged with. */
  tag?: string;
}

export class HttpLink {
  readonly server: ResolvedHttpServer;
  readonly url: URL;
  #events: HttpLinkEvents;
  #agent: Agent;
  #era: HttpEra = 'modern';
  #protocolVersion: string | undefined = MODERN_VERSION;
  #sessionId: string | undefined;
  #inflight = new Map<RequestId, InFlight>();
  #background = new Set<AbortController>();
  #closed = false;
  #closeReported = false;
  #getStream: { ac: AbortController; stopped: boolean } | undefined;
  /** The HTTP status and a body excerpt of the last failed exchange, for error messages. */
  lastHttpError: { status: number; body: string } | undefined;

  #auth: LinkAuth | undefined;
  /**
   * The connection's secrets (protocol/redact.ts), shared with its peer and its warnings: this link
   * adds the OAuth tokens (access and refresh) and the client secret in use as they change.
   */
  #redactor: Redactor;

  constructor(server: ResolvedHttpServer, events: HttpLinkEvents, auth?: LinkAuth, redactor?: Redactor) {
    this.server = server;
    this.#redactor = redactor ?? new Redactor(secretValues(server));
    this.url = new URL(server.url);
    this.#events = events;
    this.#auth = auth;
    // One pool per connection: keep-alive HTTP/1.1, no undici timers (the peer's request timeouts govern;
    // listen and GET streams are meant to stay quiet for long). An idle socket is kept IDLE_SOCKET_MS unless the
    // server's Keep-Alive header says otherwise.
    this.#agent = new Agent({ connections: 256, pipelining: 1, keepAliveTimeout: IDLE_SOCKET_MS, headersTimeout: 0, bodyTimeout: 0 });
  }

  get era(): HttpEra {
    return this.#era;
  }
  get sessionId(): string | undefined {
    return this.#sessionId;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /** Switches the headers to an era: modern with 2026-07-28, or legacy (no version header until `initialize` answered). */
  setEra(era: HttpEra, protocolVersion?: string): void {
    this.#era = era;
    this.#protocolVersion = era === 'modern' ? (protocolVersion ?? MODERN_VERSION) : protocolVersion;
  }

  /** The negotiated legacy version, sent on every request after `initialize`. */
  setProtocolVersion(v: string): void {
    this.#protocolVersion = v;
  }

  /** Starts sending one message. Requests are tracked until their response; others expect 202. */
  send(message: unknown): void {
    if (this.#closed)
      throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', `the HTTP link to ${this.url.origin} is closed`, { outcome: 'not_run' });
    const m = message as { id?: RequestId; method?: string };
    const body = JSON.stringify(message);
    if (Buffer.byteLength(body) > MAX_MESSAGE_BYTES) {
      throw new AlbedoError('ALBEDO_FRAME_TOO_LARGE', `the message is larger than the ${MAX_MESSAGE_BYTES}-byte cap`, {
        outcome: 'not_run',
      });
    }
    if (typeof m.method === 'string' && m.id !== undefined && m.id !== null) {
      const f: InFlight = { id: m.id, method: m.method, ac: new AbortController(), answered: false, dropped: false };
      const token = (m as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken;
      if (typeof token === 'string') f.tag = token;
      this.#inflight.set(m.id, f);
      void this.#postRequest(f, message as Record<string, unknown>, body);
    } else {
      void postInBackground(this.#postHost, message as Record<string, unknown>, body);
    }
  }

  /**
   * Cancels a request the way the era wants. Modern: closing its stream is
   * the cancellation (true: nothing else to send). Legacy: false, the caller
   * sends `notifications/cancelled`; the stream is dropped by `forget`.
   */
  cancelRequest(id: RequestId): boolean {
    if (this.#era !== 'modern') return false;
    this.forget(id);
    return true;
  }

  /** Stops reading a request's answer and reports nothing more for it. */
  forget(id: RequestId): void {
    const f = this.#inflight.get(id);
    if (!f) return;
    this.#inflight.delete(id);
    f.dropped = true;
    f.ac.abort();
  }

  #headers(message: Record<string, unknown>, accept = 'application/json, text/event-stream'): Record<string, string> {
    const h: Record<string, string> = { ...this.server.headers, accept };
    if (message !== NO_BODY) h['content-type'] = 'application/json';
    if (this.#protocolVersion) h['mcp-protocol-version'] = this.#protocolVersion;
    if (this.#sessionId) h['mcp-session-id'] = this.#sessionId;
    if (this.#era === 'modern') addModernHeaders(h, message, this.#events);
    return h;
  }

  /** Authorization (and a DPoP proof) for one request, when the server uses OAuth (http-auth.ts). */
  #authHeaders(htm: string): Promise<AuthHeaders> {
    return authHeaders(this.#auth, this.#redactor, htm, this.url);
  }

  /**
   * An excerpt of a server's error body (read up to ERROR_BODY_BYTES) with every secret value it was given
   * (headers, OAuth secrets, tokens) cut out before it is cut short.
   */
  #excerpt(text: string): string {
    return excerptOf(text, this.#redactor, Buffer.byteLength(text) >= ERROR_BODY_BYTES);
  }

  /** The server's text quoted for a message: secrets cut out, then cut to `max` characters (protocol/redact.ts). */
  #quote(text: string, max: number): string {
    return JSON.stringify(this.#redactor.cut(text, { keep: 'head', max }));
  }

  async #postRequest(f: InFlight, message: Record<string, unknown>, body: string): Promise<void> {
    let res: Dispatcher.ResponseData;
    const request = { renewed: false };
    for (let attempt = 0; ; attempt++) {
      let authed: AuthHeaders;
      try {
        authed = await this.#authHeaders('POST');
      } catch (err) {
        const why = `${f.method}: preparing its authorization failed: ${(err as Error).message}`;
        this.#fail(f, AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_INTERNAL', why, { outcome: 'not_run' }));
        return;
      }
      if (f.dropped) return;
      try {
        const headers = { ...this.#headers(message), ...authed?.headers };
        res = await undiciRequest(this.url, { method: 'POST', headers, body, dispatcher: this.#agent, signal: f.ac.signal });
      } catch (err) {
        // Connection refused or reset before any answer: the request may not have been read at all,
        // but a reset after sending cannot be told apart, so only a refused connection is 'not_run'.
        const code = (err as { code?: string }).code;
        const notRun = code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'UND_ERR_CONNECT_TIMEOUT';
        const why = `${f.method}: cannot reach ${this.url.origin}: ${describeNetError(err)}`;
        this.#fail(
          f,
          new AlbedoError(notRun ? 'ALBEDO_CONNECTION_CLOSED' : 'ALBEDO_STREAM_BROKEN', why, {
            outcome: notRun ? 'not_run' : 'unknown',
            data: { errno: code ?? null },
          }),
        );
        return;
      }
      if (f.dropped) return void res.body.destroy();
      try {
        if (!(await authRetry(this.#auth, res, authed?.token, attempt, request))) break;
      } catch (err) {
        const why = `${f.method}: handling the server's authorization challenge failed: ${(err as Error).message}`;
        this.#fail(f, AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_INTERNAL', why, { outcome: 'not_run' }));
        return;
      }
      if (f.dropped) return;
    }
    if (f.method === 'initialize') {
      const sid = headerOf(res.headers, 'mcp-session-id');
      if (sid !== undefined && res.statusCode >= 200 && res.statusCode < 300) {
        if (!/^[\x21-\x7e]+$/.test(sid)) {
          res.body.destroy();
          const why = `the server sent an Mcp-Session-Id that is not visible ASCII`;
          return this.#fail(f, new AlbedoError('ALBEDO_INVALID_RESPONSE', why, { outcome: 'unknown' }));
        }
        this.#sessionId = sid;
      }
    }
    if (res.statusCode < 200 || res.statusCode >= 300) return this.#onErrorStatus(f, res);
    const type = contentType(res.headers);
    try {
      if (type === 'text/event-stream') {
        const state: StreamState = newStreamState();
        const sink =
          f.tag === undefined ? this.#sink : { ...this.#sink, deliver: (m: unknown, raw: string) => this.#deliver(m, raw, f.tag) };
        await readSse(res.body, state, f.ac.signal, sink, () => f.answered || f.dropped);
        if (!f.answered && !f.dropped) await this.#resume(f, state);
      } else if (type === 'application/json') {
        const text = await readCapped(res.body, MAX_MESSAGE_BYTES);
        this.#deliverJson(text);
        if (!f.answered && !f.dropped) {
          const why = `${f.method}: the server's JSON answer held no response to request ${JSON.stringify(f.id)}`;
          this.#fail(f, new AlbedoError('ALBEDO_INVALID_RESPONSE', why, { outcome: 'unknown' }));
        }
      } else {
        res.body.destroy();
        const got = JSON.stringify(type || '(none)');
        const why = `${f.method}: the server answered with Content-Type ${got}, neither application/json nor text/event-stream`;
        this.#fail(f, new AlbedoError('ALBEDO_INVALID_RESPONSE', why, { outcome: 'unknown' }));
      }
    } catch (err) {
      if (f.dropped) return;
      this.#fail(f, this.#streamError(f, err));
    } finally {
      if (this.#inflight.get(f.id) === f) this.#inflight.delete(f.id);
    }
  }

  #sink: SseSink = {
    deliver: (m, raw) => this.#deliver(m, raw),
    warn: (m) => this.#events.onWarn(m),
    quote: (t, n) => this.#quote(t, n),
  };

  /** A modern stream cannot be resumed; a legacy one is, with Last-Event-ID (http-legacy.ts). */
  async #resume(f: InFlight, state: StreamState): Promise<void> {
    if (this.#era === 'modern') {
      const why = 'the response stream ended before the response arrived and streams of this protocol version cannot be resumed';
      this.#fail(f, new AlbedoError('ALBEDO_STREAM_BROKEN', `${f.method}: ${why}; the outcome is unknown`, { outcome: 'unknown' }));
      return;
    }
    await resumeResponse(this.#legacyHost, f, state);
  }

  #streamError(f: InFlight, err: unknown): AlbedoError {
    if (AlbedoError.is(err)) return err;
    const why = `${f.method}: the response stream broke before the response arrived (${describeNetError(err)}); the outcome is unknown`;
    return new AlbedoError('ALBEDO_STREAM_BROKEN', why, { outcome: 'unknown' });
  }

  async #onErrorStatus(f: InFlight, res: Dispatcher.ResponseData): Promise<void> {
    const status = res.statusCode;
    let text = '';
    try {
      text = await readCapped(res.body, ERROR_BODY_BYTES, true);
    } catch {
      // The excerpt is only for the message.
    }
    const excerpt = this.#excerpt(text);
    this.lastHttpError = { status, body: excerpt };
    // A legacy session the server forgot: whatever the body says, the request did not run there.
    if (status === 404 && this.#sessionId) {
      const why =
        `${f.method}: the server no longer knows our session (HTTP 404); ` + 'the request did not run, and the next request connects again';
      const err = new AlbedoError('ALBEDO_SESSION_EXPIRED', why, { outcome: 'not_run', data: { status } });
      this.#fail(f, err);
      this.#shutdown(err);
      return;
    }
    // A JSON-RPC error in the body answers the request as any error would (e.g. 400 with -32022) — unless the
    // status may pass (408, 429, 5xx: an overloaded or restarting server often says so in JSON-RPC too), which stays
    // an HTTP error with its status and Retry-After, so that a connect retry tries it again.
    if (!mayPass(status) && (contentType(res.headers) === 'application/json' || text.trimStart().startsWith('{'))) {
      try {
        const value = JSON.parse(text) as { id?: unknown; error?: unknown };
        if (value && typeof value === 'object' && value.error && (value.id === f.id || value.id === null || value.id === undefined)) {
          f.answered = true;
          this.#events.onMessage({ ...value, jsonrpc: '2.0', id: f.id }, text);
          this.#inflight.delete(f.id);
          return;
        }
      } catch {
        // Not JSON after all.
      }
    }
    const outcome = status >= 500 ? 'unknown' : 'not_run';
    const why = `${f.method}: the server answered HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`;
    // With 408, 429 and 5xx, the server's Retry-After (`retryAfterMs`): a connect retry waits at least that long.
    this.#fail(f, new AlbedoError('ALBEDO_HTTP_ERROR', why, { outcome, data: statusData(status, excerpt, res.headers) }));
  }

  #fail(f: InFlight, err: AlbedoError): void {
    if (f.dropped || f.answered) return;
    f.dropped = true;
    this.#inflight.delete(f.id);
    this.#events.onRequestFailed(f.id, err);
  }

  #deliverJson(text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      const why = `the server's JSON answer is not valid JSON: ${this.#quote(text, 120)}`;
      throw new AlbedoError('ALBEDO_INVALID_RESPONSE', why, { outcome: 'unknown' });
    }
    // A 2025-03-26 server may answer with a batch.
    for (const m of Array.isArray(value) ? value.slice(0, MAX_BATCH) : [value]) this.#deliver(m, text);
  }

  #deliver(message: unknown, raw: string, tag?: string): void {
    const m = message as { id?: RequestId; method?: unknown; result?: unknown; error?: unknown };
    if (m && typeof m === 'object' && m.method === undefined && m.id !== undefined && m.id !== null) {
      const f = this.#inflight.get(m.id);
      if (f) {
        if (f.dropped) return;
        f.answered = true;
      }
    }
    if (tag === undefined) this.#events.onMessage(message, raw);
    else this.#events.onMessage(message, raw, tag);
  }

  /** Sends a notification and resolves once the server accepted it (http-posts.ts): `notifications/initialized`. */
  notifyAccepted(method: string): Promise<void> {
    return notifyAccepted(this.#postHost, method);
  }

  /** One POST of a message that is not a request, with authorization, sent again after a challenge it answers. */
  async #post(message: Record<string, unknown>, body: string, signal: () => AbortSignal): Promise<Dispatcher.ResponseData> {
    const request = { renewed: false };
    for (let attempt = 0; ; attempt++) {
      const authed = await this.#authHeaders('POST');
      const headers = { ...this.#headers(message), ...authed?.headers };
      const res = await undiciRequest(this.url, { method: 'POST', headers, body, dispatcher: this.#agent, signal: signal() });
      if (!(await authRetry(this.#auth, res, authed?.token, attempt, request))) return res;
    }
  }

  /** What the posts that are not requests (http-posts.ts) may use of this link. */
  #postHost: PostHost = ((link: HttpLink): PostHost => ({
    get sessionId() {
      return link.#sessionId;
    },
    get startupTimeoutMs() {
      return link.server.startupTimeoutMs;
    },
    get background() {
      return link.#background;
    },
    get sink() {
      return link.#sink;
    },
    post: (m, body, signal) => link.#post(m, body, signal),
    deliverJson: (text) => link.#deliverJson(text),
    excerpt: (text) => link.#excerpt(text),
    warn: (m) => link.#events.onWarn(m),
    shutdown: (err) => link.#shutdown(err),
  }))(this);

  /**
   * Legacy: opens the optional GET stream for server messages unrelated to a
   * request. 405 or any refusal leaves it closed for the link's life; a
   * dropped stream reopens after the server's `retry`, or after a wait that
   * doubles from 1 s to 60 s, and is given up after eight silent attempts.
   * Resolves once the first GET is answered (open or refused), so that a
   * server which sends its requests only on this stream finds it open.
   */
  openGetStream(): Promise<void> {
    if (this.#era !== 'legacy' || this.#getStream || this.#closed) return Promise.resolve();
    const g = { ac: new AbortController(), stopped: false };
    this.#getStream = g;
    let answered!: () => void;
    const firstAnswer = new Promise<void>((r) => (answered = r));
    void holdGetStream(this.#legacyHost, g, answered)
      .catch(() => {})
      .finally(answered);
    return firstAnswer;
  }

  /** What the legacy streams (http-legacy.ts) may use of this link. */
  #legacyHost: LegacyHost = ((link: HttpLink): LegacyHost => ({
    get url() {
      return link.url;
    },
    get agent() {
      return link.#agent;
    },
    get sessionId() {
      return link.#sessionId;
    },
    get closed() {
      return link.#closed;
    },
    getHeaders: async (lastEventId) => {
      const headers = { ...link.#headers(NO_BODY, 'text/event-stream'), ...(await link.#authHeaders('GET'))?.headers };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      return headers;
    },
    deliver: (m, raw) => link.#deliver(m, raw),
    warn: (m) => link.#events.onWarn(m),
    quote: (t, n) => link.#quote(t, n),
    fail: (f, err) => link.#fail(f as InFlight, err),
    shutdown: (err) => link.#shutdown(err),
  }))(this);

  /** Ends the link for good: in-flight requests fail, the session (if any) is deleted. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    const sid = this.#sessionId;
    this.#shutdown(null);
    if (sid && this.#era === 'legacy') {
      try {
        const authed = await this.#authHeaders('DELETE').catch(() => undefined);
        const headers = { ...this.#headers(NO_BODY), ...authed?.headers };
        const res = await undiciRequest(this.url, {
          method: 'DELETE',
          headers,
          dispatcher: this.#agent,
          signal: AbortSignal.timeout(2_000),
        });
        await res.body.dump();
      } catch {
        // The server may be gone already; a 405 means it does not let clients end sessions.
      }
    }
    await this.#agent.close().catch(() => {});
    await this.#agent.destroy().catch(() => {});
  }

  #shutdown(err: AlbedoError | null): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#getStream) {
      this.#getStream.stopped = true;
      this.#getStream.ac.abort();
    }
    const reason =
      err ?? new AlbedoError('ALBEDO_CONNECTION_CLOSED', `the connection to ${this.url.origin} was closed`, { outcome: 'unknown' });
    for (const f of [...this.#inflight.values()]) {
      this.#fail(f, reason);
      f.ac.abort();
    }
    for (const ac of this.#background) ac.abort();
    if (err) void this.#agent.destroy().catch(() => {});
    if (!this.#closeReported) {
      this.#closeReported = true;
      this.#events.onClose(err);
    }
  }
}

/** Stands for "no body" in header building (GET, DELETE). */
const NO_BODY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;
