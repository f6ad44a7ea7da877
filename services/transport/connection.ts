/**
 * A connection actor: one configured server, its link, its JSON-RPC peer,
 * its negotiated era and its catalogue. A server that drops is dialled again
 * by the next request; list changes rediscover in the background
 * (catalogue-keeper.ts). The server's own requests go to the embedder
 * (client-side.ts); what it says besides JSON-RPC explains a failure
 * (server-noise.ts).
 */
import { AlbedoError, serializeError } from '../../protocol/errors.ts';
import type { JsonRpcNotification, JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { LISTEN_ACK, LISTEN_METHOD } from '../../protocol/rev2026-07-28/index.ts';
import type { Catalogue, Implementation } from '../../protocol/mcp.ts';
import type { ResolvedServer } from '../../protocol/config.ts';
import { MAX_DEPTH, depthOf } from '../../protocol/bounds.ts';
import {
  SHARED_CONNECTION_PREFIX,
  type ClientOp,
  type ConnectionInfo,
  type OpenResult,
  type TransportEvents,
} from '../../protocol/services/transport.ts';
import { negotiate, negotiateHttp } from '../negotiation/negotiate.ts';
import type { EraCache } from '../negotiation/era-cache.ts';
import { RpcPeer } from './rpc-peer.ts';
import { StdioLink } from './stdio-link.ts';
import type { HttpLink } from './http-link.ts';
import type { LinkAuth } from '../oauth/link-auth.ts';
import { discoverAll, listsFor, type Lister } from './discovery.ts';
import { CatalogueKeeper, listsChangedBy } from './catalogue-keeper.ts';
import { NO_CLIENT, answerServerRequest, type ClientSide } from './client-side.ts';
import { ServerNoise } from './server-noise.ts';
import { requestWithInput, type InputRoundsContext } from './input-rounds.ts';
import { Asked, operate, type OpTarget } from './operations.ts';
import { EraParams } from './era-params.ts';
import { WarnLimiter } from './warn-limiter.ts';
import { ToolHeaders } from './tool-headers.ts';
import { Listens, type ListenLink } from './listen.ts';
import { Redactor, secretValues } from '../../protocol/redact.ts';
import { Notices } from './notices.ts';

export type Emit = <E extends keyof TransportEvents>(name: E, payload: TransportEvents[E]) => void;

/** How long a legacy HTTP dial waits for its GET stream to be answered. */
const GET_STREAM_WAIT_MS = 2_000;

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
  /** The catalogue as last discovered, and its rediscovery. */
  #keeper: CatalogueKeeper;
  #closed = false;
  #reaping = new Set<Promise<void>>();
  /** The lines that were not JSON-RPC, for the silence hint and a failed open's data. */
  #noise = new ServerNoise((text, max) => this.#quote(text, max));
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
  /** Progress, log messages and resource updates, relayed as events (notices.ts). */
  #notices: Notices;
  /** A modern server's held listen, with the resources subscribed to (listen.ts). */
  #listens = new Listens();
  /** What a legacy server was asked to keep, asked again after a redial (operations.ts). */
  #asked = new Asked();

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
    this.#notices = new Notices(id, emit, this.#redactor);
    this.#keeper = new CatalogueKeeper({
      name,
      timeoutMs: server.callTimeoutMs,
      closed: () => this.#closed,
      lister: () => (this.#live ? this.#lister(this.#live) : undefined),
      warn: (m, code) => this.#warn(m, code),
      changed: (catalogue) => this.#emit('connection/catalogue-changed', { id: this.id, catalogue }),
    });
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
      // What a stdio server said on the side goes into the error's data (server-noise.ts), redacted with the rest.
      throw this.#redacted(this.#noise.lastWords(err, this.#stdio?.stderrTail));
    }
  }

  async #open(signal?: AbortSignal): Promise<OpenResult> {
    const warnings: string[] = this.#openNotes;
    const live = await this.#dial();
    const deadline = Date.now() + this.server.startupTimeoutMs;
    // List changes that arrive meanwhile wait for this first discovery (the keeper awaits it).
    const discovering = discoverAll(this.#lister(live), listsFor(live.info), deadline, warnings, signal);
    this.#keeper.discovering(discovering);
    const { catalogue, sizes } = await discovering;
    if (depthOf(live.info, MAX_DEPTH) > MAX_DEPTH) {
      const why = `${this.name}: its capabilities or server info nest deeper than ${MAX_DEPTH} levels`;
      throw new AlbedoError('ALBEDO_INVALID_RESPONSE', why, { outcome: 'unknown' });
    }
    this.#keeper.accept(catalogue, sizes);
    if (live.info.era === 'modern') this.#listens.hold(this.#listenLink(live), live.info.capabilities);
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
          onMessage: this.#guard(self, getPeer, (m: unknown, raw: string, tag?: string) => getPeer().receiveMessage(m, raw, tag)),
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
      // `tag`: the call whose HTTP stream carried the request (none over stdio): never guessed from what is in flight.
      onRequest: (req: JsonRpcRequest, signal: AbortSignal, tag?: string) =>
        answerServerRequest(this.#client, req, this.server.callTimeoutMs, signal, tag, this.id.startsWith(SHARED_CONNECTION_PREFIX)),
      onNotification: (n) => this.#onNotification(n),
      onJunk: (what, line) => this.#onJunk(what, line),
      secrets: this.#redactor,
    });
    this.#dialLink = link;
    try {
      if (link instanceof StdioLink) await link.start();
      // A stale or marked legacy verdict is not trusted (era-cache.ts): this dial probes, discover first.
      const row = this.#cache?.get(this.server.fingerprint);
      const last = this.#lastInfo ? { era: this.#lastInfo.era, protocolVersion: this.#lastInfo.protocolVersion } : null;
      const cached = row ? this.#cache!.trusted(this.server.fingerprint) : last;
      const nopts = {
        clientInfo: this.#clientInfo,
        timeoutMs: this.server.startupTimeoutMs,
        cached,
        capabilities: this.#client.capabilities,
        explainSilence: () => this.#noise.silenceHint(link instanceof StdioLink ? link.stderrTail : ''),
        redactor: this.#redactor,
      };
      const info = !(link instanceof StdioLink) ? await negotiateHttp(peer, link, nopts) : await negotiate(peer, nopts);
      if (this.#closed)
        throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} was closed while it opened`, { outcome: 'not_run' });
      const serverVersion = typeof info.serverInfo?.version === 'string' ? info.serverInfo.version : null;
      const judged = info.detection !== 'cached' || info.era === 'modern';
      await this.#cache
        ?.put(this.server.fingerprint, { era: info.era, protocolVersion: info.protocolVersion, at: Date.now(), serverVersion }, judged)
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

  #onNotification(n: JsonRpcNotification): void {
    const lists = listsChangedBy(n.method);
    if (lists) return this.#keeper.rediscover(lists);
    if (this.#notices.handle(n.method, n.params)) return;
    if (n.method === LISTEN_ACK) return this.#listens.acknowledged(n.params);
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
  }

  #onJunk(what: string, line: string): void {
    this.#noise.junk(line);
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
      ask: (m, p, t, s, k, g) => this.#client.ask(m, p, t, s, k, g),
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

  /** A modern server whose lists can change, or with resources subscribed to, holds one subscriptions/listen (listen.ts). */
  #listenLink(live: Live): ListenLink {
    return {
      current: () => this.#live === live && !this.#closed,
      send: (f, signal) => {
        this.#listenId = live.peer.nextId;
        return live.peer.request(LISTEN_METHOD, this.#params(live, { notifications: f }), { timeoutMs: Infinity, signal });
      },
      sentId: () => this.#listenId,
      resync: () => this.#keeper.rediscover(listsFor(live.info)),
      warn: (m) => this.#warn(m),
      guard: (fn) =>
        this.#guard(
          () => live.link,
          () => live.peer,
          fn,
        ),
    };
  }

  /** Runs one operation (operations.ts), dialling again first when the server dropped; its progress is relayed meanwhile. */
  request(op: ClientOp, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const token = (op as { progressToken?: string | number }).progressToken;
    if (token === undefined) return this.#send(op, timeoutMs, signal);
    this.#notices.track(token);
    return this.#send(op, timeoutMs, signal).finally(() => this.#notices.untrack(token));
  }

  #send(op: ClientOp, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
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
      capabilities: live.info.capabilities,
      setLogLevel: (level) => {
        this.#eraParams.logLevel = level;
      },
      asked: this.#asked,
      listenTo: (uri, on) => this.#listens.subscribe(this.#listenLink(live), live.info.capabilities, uri, on),
    };
    return live.target;
  }

  /** After a redial: a modern server's listen is re-held, and the catalogue is checked in the background. */
  #afterRedial(live: Live): void {
    if (live.info.era === 'modern') this.#listens.hold(this.#listenLink(live), live.info.capabilities);
    // A legacy server's new session knows nothing of the old one's log level and subscriptions: they are sent again.
    else for (const [m, p] of this.#asked.again()) this.#request(live, m, p, this.server.callTimeoutMs).catch((e) => this.#warn(e.message));
    this.#keeper.rediscover(listsFor(live.info));
  }

  get catalogue(): Catalogue {
    return this.#keeper.catalogue;
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
