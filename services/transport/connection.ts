/**
 * A connection actor: one configured server, its link, its JSON-RPC peer,
 * its negotiated era and its catalogue. A server that drops is dialled again
 * by the next request; list changes rediscover in the background, one at a
 * time (a change meanwhile runs it once more).
 */
import { AlbedoError, serializeError } from '../../protocol/errors.ts';
import { ErrorCode, type JsonRpcNotification, type JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { LISTEN_METHOD } from '../../protocol/rev2026-07-28/index.ts';
import { LIST_FIELD, type Catalogue, type Implementation, type ListMethod } from '../../protocol/mcp.ts';
import type { ResolvedServer } from '../../protocol/config.ts';
import { MAX_DEPTH, depthOf } from '../../protocol/bounds.ts';
import type { ClientOp, ConnectionInfo, OpenResult, TransportEvents } from '../../protocol/services/transport.ts';
import { INPUT_METHODS } from '../../protocol/client-input.ts';
import { negotiate, negotiateHttp } from '../negotiation/negotiate.ts';
import type { EraCache } from '../negotiation/era-cache.ts';
import { RpcPeer, WireError } from './rpc-peer.ts';
import { StdioLink } from './stdio-link.ts';
import type { HttpLink } from './http-link.ts';
import type { LinkAuth } from '../oauth/link-auth.ts';
import { listAll, discoverAll, listsFor, checkTotal, type Lister, type ListBytes } from './discovery.ts';
import { requestWithInput, type InputRoundsContext } from './input-rounds.ts';
import { operate, type OpTarget } from './operations.ts';
import { EraParams } from './era-params.ts';
import { WarnLimiter } from './warn-limiter.ts';
import { ToolHeaders } from './tool-headers.ts';
import { holdListen, listenFilter } from './listen.ts';
import { Redactor, secretValues } from '../../protocol/redact.ts';

export type Emit = <E extends keyof TransportEvents>(name: E, payload: TransportEvents[E]) => void;

/** Looked up with Map, never a plain object: a wire string such as `constructor` must not reach Object.prototype. */
const LIST_FOR_NOTIFICATION: ReadonlyMap<string, ListMethod[]> = new Map([
  ['notifications/tools/list_changed', ['tools/list']],
  ['notifications/resources/list_changed', ['resources/list', 'resources/templates/list']],
  ['notifications/prompts/list_changed', ['prompts/list']],
]);
/** Rediscoveries of one connection start at least this far apart. */
const REDISCOVER_GAP_MS = 1_000;
/** How long a legacy HTTP dial waits for its GET stream to be answered. */
const GET_STREAM_WAIT_MS = 2_000;

/** The embedder's side of the connection: the capabilities its handlers give, and a way to ask them. */
export interface ClientSide {
  capabilities: Record<string, unknown>;
  /**
   * Runs the embedder's handler for one input request (elicitation/create,
   * sampling/createMessage, roots/list); `signal` aborts the handler's own
   * signal when the request waiting on it is given up.
   */
  ask(method: string, params: unknown, timeoutMs: number, signal?: AbortSignal): Promise<Record<string, unknown>>;
}

const NO_CLIENT: ClientSide = {
  capabilities: {},
  ask: (method) =>
    Promise.reject(new WireError(ErrorCode.MethodNotFound, `Method not found: ${method} (this client declares no capabilities)`)),
};

type Link = StdioLink | HttpLink;
interface HttpParts {
  HttpLink: typeof HttpLink;
  auth: LinkAuth | undefined;
}

interface Live {
  link: Link;
  peer: RpcPeer;
  info: ConnectionInfo;
  /** What input-rounds.ts and operations.ts need of this link, made once (not closures and objects per request). */
  rounds?: InputRoundsContext;
  target?: OpTarget;
}

/** What went wrong inside one of our own callbacks, as the connection's failure. */
function contained(err: unknown): AlbedoError {
  if (AlbedoError.is(err)) return err;
  const why = err instanceof Error ? err.message : String(err);
  return new AlbedoError('ALBEDO_INTERNAL', `handling the server's input failed (${why}); the connection was closed`, {
    outcome: 'unknown',
  });
}

export class Connection {
  readonly id: string;
  readonly server: ResolvedServer;
  /** The server's name, for errors and warnings (the connection id when none was given). */
  readonly name: string;
  #clientInfo: Implementation;
  #client: ClientSide;
  /** Modern HTTP: each tool's Mcp-Param-* headers, from its x-mcp-header annotations. */
  #toolHeaders = new ToolHeaders();
  /** The JSON-RPC id of the held subscriptions/listen, which a server's notifications/cancelled may name. */
  #listenId: number | undefined;
  #cache: EraCache | null;
  #emit: Emit;
  #live: Live | undefined;
  #dialling: Promise<Live> | undefined;
  #catalogue: Catalogue = { tools: [], resources: [], resourceTemplates: [], prompts: [] };
  #sizes: ListBytes = {};
  #rediscovering: Promise<void> | undefined;
  #lastRediscovery = 0;
  #again = new Set<ListMethod>();
  #closed = false;
  #reaping = new Set<Promise<void>>();
  /** How many lines were not JSON-RPC, and the first one quoted (redacted, then cut), for the silence hint. */
  #junk = { count: 0, sample: '' };
  /**
   * The values the server was given that may be secrets, and the OAuth tokens its HTTP link sends
   * (added as they change), with their forms (protocol/redact.ts): cut out of every warning, of every
   * failure it reports (message and data), and of its own text before any of it is cut short.
   */
  #redactor: Redactor;
  #warnings = new WarnLimiter();
  #lastInfo: ConnectionInfo | undefined;
  #dialLink: Link | undefined;
  /** The last stdio link dialled: what the server wrote on stderr, for a failed open's error (#withLastWords). */
  #stdio: StdioLink | undefined;
  /** Warnings raised while opening, reported with the open result. */
  #openNotes: string[] = [];
  /** Each request's params for the era (era-params.ts: a modern _meta built once). */
  #eraParams: EraParams;
  /** Settles when the first discovery has; rediscovery never races it. */
  #initial: Promise<void> = Promise.resolve();

  constructor(
    id: string,
    server: ResolvedServer,
    clientInfo: Implementation,
    cache: EraCache | null,
    emit: Emit,
    client: ClientSide = NO_CLIENT,
    name: string = id,
  ) {
    this.id = id;
    this.server = server;
    this.name = name;
    this.#clientInfo = clientInfo;
    this.#client = client;
    this.#cache = cache;
    this.#emit = emit;
    this.#eraParams = new EraParams(clientInfo, client.capabilities);
    this.#redactor = new Redactor(secretValues(server));
  }

  /** The server's text, at most `max` characters, quoted: secrets cut out first, then cut short. */
  #quote(text: string, max: number): string {
    return JSON.stringify(this.#redactor.cut(text, { keep: 'head', max }));
  }

  /**
   * A failure leaving the connection, with every secret cut out of its message (its quotes were cut so
   * already) and of every string in its data (a server's error data, its required capabilities…).
   */
  #redacted<T>(err: T): T {
    if (!(err instanceof Error)) return err;
    err.message = this.#redactor.redact(err.message);
    if (AlbedoError.is(err) && err.data !== undefined) {
      Object.defineProperty(err, 'data', { value: this.#redactor.data(err.data), enumerable: true, writable: true, configurable: true });
    }
    return err;
  }

  /** Rejects with `err` redacted: every failure leaving request(). */
  #fail = (err: unknown): never => {
    throw this.#redacted(err);
  };

  /** Dials, negotiates and discovers everything. */
  async open(signal?: AbortSignal): Promise<OpenResult> {
    try {
      const opened = await this.#open(signal);
      return { ...opened, warnings: opened.warnings.map((w) => this.#redactor.redact(w)) };
    } catch (err) {
      throw this.#redacted(this.#withLastWords(err));
    }
  }

  /**
   * A failed open's error with what a stdio server said on the side, in its `data` (unless there already): its stderr
   * tail (when it wrote any), and how many lines on stdout were not JSON-RPC with the first one — for a person's message of why it did not
   * start (daemon/strict-save.ts). Redacted with the rest of the data as it leaves.
   */
  #withLastWords(err: unknown): unknown {
    const link = this.#stdio;
    if (!AlbedoError.is(err) || !link) return err;
    const data = err.data;
    if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) return err;
    const more: Record<string, unknown> = {};
    // Only when it wrote something: an error's data stays as its code defines it otherwise.
    if (!(data && 'stderrTail' in data) && link.stderrTail) more.stderrTail = link.stderrTail;
    if (this.#junk.count) more.stdoutJunk = { lines: this.#junk.count, first: this.#junk.sample };
    Object.defineProperty(err, 'data', { value: { ...data, ...more }, enumerable: true, writable: true, configurable: true });
    return err;
  }

  async #open(signal?: AbortSignal): Promise<OpenResult> {
    const warnings: string[] = this.#openNotes;
    const live = await this.#dial();
    const deadline = Date.now() + this.server.startupTimeoutMs;
    // List changes that arrive meanwhile wait for this first discovery (#rediscover awaits it).
    const discovering = discoverAll(this.#lister(live), listsFor(live.info), deadline, warnings, signal);
    this.#initial = discovering.then(
      () => undefined,
      () => undefined,
    );
    const { catalogue, sizes } = await discovering;
    if (depthOf(live.info, MAX_DEPTH) > MAX_DEPTH) {
      const why = `${this.name}: its capabilities or server info nest deeper than ${MAX_DEPTH} levels`;
      throw new AlbedoError('ALBEDO_INVALID_RESPONSE', why, { outcome: 'unknown' });
    }
    this.#catalogue = catalogue;
    this.#sizes = sizes;
    if (live.info.era === 'modern') this.#listen(live);
    return { ...live.info, catalogue, warnings };
  }

  #dial(): Promise<Live> {
    if (this.#closed)
      return Promise.reject(new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} is closed`, { outcome: 'not_run' }));
    if (this.#live) return Promise.resolve(this.#live);
    this.#dialling ??= this.#dialOnce().finally(() => {
      this.#dialling = undefined;
    });
    return this.#dialling;
  }

  #linkAuth: LinkAuth | undefined;

  /** One OAuth state per connection (its DPoP nonce and token cache outlive a re-dial). */
  async #auth(): Promise<LinkAuth | undefined> {
    if (this.server.type !== 'http' || !this.server.auth) return undefined;
    this.#linkAuth ??= new (await import('../oauth/link-auth.ts')).LinkAuth(this.server.auth, this.server.url);
    return this.#linkAuth;
  }

  /**
   * The containment boundary: every callback a link or peer runs for this
   * connection goes through here. Whatever it throws fails this connection
   * alone (`connection/dropped` with the cause), never the worker.
   */
  #guard<A extends unknown[]>(link: () => Link, peer: () => RpcPeer, fn: (...args: A) => void): (...args: A) => void {
    return (...args: A) => {
      try {
        fn(...args);
      } catch (err) {
        this.#fault(link(), peer(), contained(err));
      }
    };
  }

  /** A fault in our handling of this link's input: the link is failed as if the server had dropped. */
  #fault(link: Link, peer: RpcPeer, err: AlbedoError): void {
    try {
      this.#onLinkClosed(link, peer, err);
      this.#reap(link);
    } catch {
      // Failing the connection must not fail the worker either.
    }
  }

  /** HTTP's modules (undici, SSE, OAuth) load with the first HTTP dial: a stdio-only worker never needs them. */
  async #http(): Promise<HttpParts> {
    const [{ HttpLink }, auth] = await Promise.all([import('./http-link.ts'), this.#auth()]);
    if (this.#closed)
      throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} was closed while it opened`, { outcome: 'not_run' });
    return { HttpLink, auth };
  }

  #newLink(getPeer: () => RpcPeer, http: HttpParts | undefined): Link {
    let link!: Link;
    const self = (): Link => link;
    if (this.server.type === 'http') {
      link = new http!.HttpLink(
        this.server,
        {
          onMessage: this.#guard(self, getPeer, (m: unknown, raw: string) => getPeer().receiveMessage(m, raw)),
          onRequestFailed: this.#guard(self, getPeer, (id, err) => getPeer().fail(id, err)),
          onClose: this.#guard(self, getPeer, (err: AlbedoError | null) => this.#onLinkClosed(link, getPeer(), err)),
          onWarn: this.#guard(self, getPeer, (message: string) => {
            const note = this.#warnings.admit(message);
            if (note) this.#warn(note);
          }),
          headerParams: (name) => this.#toolHeaders.of(name),
        },
        http!.auth,
        this.#redactor,
      );
      return link;
    }
    link = new StdioLink(this.server, {
      onMessage: this.#guard(self, getPeer, (line: string) => getPeer().receive(line)),
      onClose: this.#guard(self, getPeer, (err: AlbedoError | null) => this.#onLinkClosed(link, getPeer(), err)),
    });
    this.#stdio = link;
    return link;
  }

  async #dialOnce(): Promise<Live> {
    let peer!: RpcPeer;
    // Only an HTTP dial waits here (for its modules): a stdio link is made in this turn, as a close right after expects.
    const http = this.server.type === 'http' ? await this.#http() : undefined;
    const link = this.#newLink(() => peer, http);
    const redial = this.#lastInfo !== undefined;
    peer = new RpcPeer(link, {
      onRequest: (req: JsonRpcRequest, signal: AbortSignal) => this.#onServerRequest(req, signal),
      onNotification: (n) => this.#onNotification(n),
      onJunk: (what, line) => this.#onJunk(what, line),
      secrets: this.#redactor,
    });
    this.#dialLink = link;
    try {
      if (link instanceof StdioLink) await link.start();
      const cached =
        this.#cache?.get(this.server.fingerprint) ??
        (this.#lastInfo ? { era: this.#lastInfo.era, protocolVersion: this.#lastInfo.protocolVersion } : null);
      const nopts = {
        clientInfo: this.#clientInfo,
        timeoutMs: this.server.startupTimeoutMs,
        cached,
        capabilities: this.#client.capabilities,
        explainSilence: () => this.#silenceHint(link),
        redactor: this.#redactor,
      };
      const info = !(link instanceof StdioLink) ? await negotiateHttp(peer, link, nopts) : await negotiate(peer, nopts);
      if (this.#closed)
        throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} was closed while it opened`, { outcome: 'not_run' });
      await this.#cache
        ?.put(this.server.fingerprint, { era: info.era, protocolVersion: info.protocolVersion, at: Date.now() })
        .catch(() => {});
      const live: Live = { link, peer, info };
      this.#live = live;
      if (!(link instanceof StdioLink) && info.era === 'legacy') {
        // Wait (briefly) until the GET stream is open or refused: some servers send their requests only there.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          link.openGetStream(),
          new Promise<void>((r) => {
            timer = setTimeout(r, GET_STREAM_WAIT_MS);
          }),
        ]);
        clearTimeout(timer);
      }
      this.#lastInfo = info;
      // Once per dial, however many requests waited for it: one listen, one check of the catalogue.
      if (redial && this.#live === live) this.#afterRedial(live);
      return live;
    } catch (err) {
      this.#reap(link);
      throw err;
    } finally {
      this.#dialLink = undefined;
    }
  }

  #silenceHint(link: Link): string {
    const parts: string[] = [];
    if (this.#junk.count) {
      parts.push(`it wrote ${this.#junk.count} line(s) that are not JSON-RPC, the first: ${this.#junk.sample}`);
    }
    const tail = link instanceof StdioLink ? link.stderrTail.trim() : '';
    if (tail) parts.push(`its stderr ends:\n${tail}`);
    return parts.join('; ');
  }

  #reap(link: Link): void {
    const p = link
      .close()
      .catch(() => {})
      .finally(() => this.#reaping.delete(p));
    this.#reaping.add(p);
  }

  #onLinkClosed(link: Link, peer: RpcPeer, err: AlbedoError | null): void {
    const reason = err ?? new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} was closed`, { outcome: 'unknown' });
    peer.close(reason);
    if (this.#live?.link !== link) return;
    this.#live = undefined;
    if (err && !this.#closed) {
      this.#emit('connection/dropped', { id: this.id, error: serializeError(this.#redacted(err)) });
      this.#reap(link);
    }
  }

  #warn(message: string, code?: string): void {
    const text = this.#redactor.redact(message);
    this.#emit('connection/warned', code ? { id: this.id, message: text, code } : { id: this.id, message: text });
  }

  /**
   * A server's own request: ping is answered; input requests go to the
   * embedder's handlers when it declared them. `signal` aborts when the
   * server cancels its request or the connection ends.
   */
  async #onServerRequest(req: JsonRpcRequest, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (req.method === 'ping') return {};
    const cap = Object.hasOwn(INPUT_METHODS, req.method) ? INPUT_METHODS[req.method] : undefined;
    if (!cap || !Object.hasOwn(this.#client.capabilities, cap)) {
      throw new WireError(
        ErrorCode.MethodNotFound,
        `Method not found: ${req.method} (this client did not declare ${cap ?? 'a capability for it'})`,
      );
    }
    try {
      return await this.#client.ask(req.method, req.params ?? {}, this.server.callTimeoutMs, signal);
    } catch (err) {
      if (err instanceof WireError) throw err;
      throw new WireError(ErrorCode.InternalError, `the client's ${cap} handler failed: ${(err as Error).message}`);
    }
  }

  #onNotification(n: JsonRpcNotification): void {
    const lists = LIST_FOR_NOTIFICATION.get(n.method);
    if (lists) return this.#rediscover(lists);
    // A server ends a subscriptions/listen stream (on stdio) with notifications/cancelled for its id:
    // the subscription is over, as after its final result, and is not held again.
    if (n.method === 'notifications/cancelled') {
      const id = (n.params as { requestId?: unknown } | undefined)?.requestId;
      if (id !== undefined && id === this.#listenId) this.#live?.peer.settle(id as number, {});
      return;
    }
    // Every MCP notification is named notifications/…; anything else (`constructor`, `__proto__`) is not one.
    if (!n.method.startsWith('notifications/')) {
      const note = this.#warnings.admit(
        () => `ignored a notification with method ${this.#quote(n.method, 100)}, which is not an MCP notification`,
      );
      if (note) this.#warn(note);
    }
    // Other notifications (logging, progress, the listen acknowledgement) need no action here.
  }

  #onJunk(what: string, line: string): void {
    this.#junk.count++;
    if (this.#junk.count === 1) this.#junk.sample = this.#quote(line, 120);
    // Quoted only when the warning is shown: a flood of junk is counted, never redacted line by line.
    const note = this.#warnings.admit(() => `ignored a line from the server (${what}): ${this.#quote(line, 200)}`);
    if (!note) return;
    if (!this.#live && this.#openNotes.length < 16) this.#openNotes.push(note);
    this.#warn(note);
  }

  #params(live: Live, params?: Record<string, unknown>): Record<string, unknown> | undefined {
    return this.#eraParams.of(live.info.era, params);
  }

  /** One request with era params; `input_required` is fulfilled by the embedder (input-rounds.ts). */
  #request(
    live: Live,
    method: string,
    params: Record<string, unknown> | undefined,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    live.rounds ??= {
      send: (m, p, t, s) => live.peer.request(m, this.#params(live, p), { timeoutMs: t, signal: s }),
      capabilities: this.#client.capabilities,
      ask: (m, p, t, s) => this.#client.ask(m, p, t, s),
      redactor: this.#redactor,
    };
    return requestWithInput(live.rounds, method, params, timeoutMs, signal);
  }

  #lister(live: Live): Lister {
    return {
      server: this.name,
      redactor: this.#redactor,
      request: (m, p, t, s) => this.#request(live, m, p, t, s),
      acceptTools: (tools, warnings) => this.#acceptTools(live, tools, warnings),
    };
  }

  /** Modern HTTP: tools are filtered by their x-mcp-header annotations (tool-headers.ts). */
  #acceptTools(live: Live, tools: unknown[], warnings: string[]): unknown[] {
    if (live.link instanceof StdioLink || live.info.era !== 'modern') return tools;
    return this.#toolHeaders.accept(tools, warnings, this.#live ? (m) => this.#warn(m) : undefined);
  }

  /** A modern server whose lists can change gets one held subscriptions/listen (listen.ts). */
  #listen(live: Live): void {
    const filter = listenFilter(live.info.capabilities);
    if (Object.keys(filter).length === 0) return;
    holdListen(
      {
        current: () => this.#live === live && !this.#closed,
        send: (f) => {
          this.#listenId = live.peer.nextId;
          return live.peer.request(LISTEN_METHOD, this.#params(live, { notifications: f }), { timeoutMs: Infinity });
        },
        resync: () => this.#rediscover(listsFor(live.info)),
        warn: (m) => this.#warn(m),
        guard: (fn) =>
          this.#guard(
            () => live.link,
            () => live.peer,
            fn,
          ),
      },
      filter,
    );
  }

  /**
   * Fetches the named lists again in the background, one run at a time (a
   * change meanwhile runs it once more); a catalogue that differs is
   * published. Everything it does is inside the boundary: a failure is a
   * warning, never an unhandled rejection.
   */
  #rediscover(lists: ListMethod[]): void {
    for (const l of lists) this.#again.add(l);
    if (this.#rediscovering) return;
    this.#rediscovering = this.#rediscoverLoop()
      .catch((err) => this.#warn(`rediscovery failed: ${(err as Error)?.message ?? String(err)}`))
      .finally(() => {
        this.#rediscovering = undefined;
      });
  }

  async #rediscoverLoop(): Promise<void> {
    await this.#initial;
    while (this.#again.size && !this.#closed) {
      // A server that announces a change with every answer must not keep us listing in a loop.
      const wait = this.#lastRediscovery + REDISCOVER_GAP_MS - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait).unref());
      if (this.#closed) return;
      this.#lastRediscovery = Date.now();
      const todo = [...this.#again];
      this.#again.clear();
      const live = this.#live;
      if (!live) return;
      const fresh: Partial<Record<string, unknown[]>> = {};
      const sizes: ListBytes = { ...this.#sizes };
      try {
        for (const m of todo) {
          const listed = await listAll(this.#lister(live), m, this.server.callTimeoutMs, []);
          fresh[LIST_FIELD[m]] = listed.items;
          sizes[LIST_FIELD[m]] = listed.bytes;
        }
        checkTotal(this.name, sizes);
      } catch (err) {
        const code = AlbedoError.is(err) ? err.code : undefined;
        this.#warn(`rediscovery failed, the previous catalogue stays: ${(err as Error).message}`, code);
        continue;
      }
      // Merge into the catalogue as it is now: only the lists just fetched are replaced.
      const next = { ...this.#catalogue, ...fresh } as Catalogue;
      if (JSON.stringify(next) !== JSON.stringify(this.#catalogue)) {
        this.#catalogue = next;
        this.#sizes = sizes;
        this.#emit('connection/catalogue-changed', { id: this.id, catalogue: next });
      }
    }
  }

  /** Runs one operation (operations.ts), dialling again first when the server dropped. */
  request(op: ClientOp, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    // A live connection goes straight on: awaiting an already settled dial cost a promise and a turn per call.
    const live = this.#closed ? undefined : this.#live;
    // Every failure, the redial's too, leaves redacted (message and data).
    if (live) return operate(this.#target(live), op, timeoutMs, signal).catch(this.#fail);
    return this.#dial()
      .then((l) => operate(this.#target(l), op, timeoutMs, signal))
      .catch(this.#fail);
  }

  /** What operations.ts needs of a live link, made once per dial. */
  #target(live: Live): OpTarget {
    live.target ??= {
      era: live.info.era,
      http: !(live.link instanceof StdioLink),
      lister: this.#lister(live),
      request: (m, p, t, s) => this.#request(live, m, p, t, s),
    };
    return live.target;
  }

  /** After a redial: a modern server's listen is re-held, and the catalogue is checked in the background. */
  #afterRedial(live: Live): void {
    if (live.info.era === 'modern') this.#listen(live);
    this.#rediscover(listsFor(live.info));
  }

  get catalogue(): Catalogue {
    return this.#catalogue;
  }

  /** Whether it has a live link now (not dropped, not closed). */
  get live(): boolean {
    return this.#live !== undefined && !this.#closed;
  }

  /** Closes the link and waits until the launcher has reaped the server's whole group. Idempotent. */
  async close(): Promise<{ stderrTail: string }> {
    this.#closed = true;
    const live = this.#live;
    this.#live = undefined;
    if (live) this.#reap(live.link);
    // A dial in progress is cut short: its link closes and the handshake fails at once.
    if (this.#dialLink) this.#reap(this.#dialLink);
    await Promise.allSettled([this.#dialling, ...this.#reaping]);
    await Promise.allSettled([...this.#reaping]);
    return { stderrTail: live?.link instanceof StdioLink ? live.link.stderrTail : '' };
  }
}
