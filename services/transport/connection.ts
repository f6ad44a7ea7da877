/**
 * A connection actor: one configured server, its link, its JSON-RPC peer,
 * its negotiated era and its catalogue. A server that drops is dialled again
 * by the next request; list changes rediscover in the background, one at a
 * time (a change meanwhile runs it once more).
 */
import { AlbedoError, serializeError } from '../../protocol/errors.ts';
import { ErrorCode, type JsonRpcNotification, type JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { modernParams, LISTEN_METHOD, LISTEN_ACK, DISCOVER_METHOD, type ListenFilter } from '../../protocol/rev2026-07-28/index.ts';
import { legacyParams } from '../../protocol/rev2025-11-25/index.ts';
import {
  listSchemas, LIST_FIELD, MAX_LIST_PAGES, resultTypeOf, callToolResultSchema, readResourceResultSchema, getPromptResultSchema,
  type Catalogue, type Implementation, type ListMethod,
} from '../../protocol/mcp.ts';
import { describeZodError, type ResolvedServer } from '../../protocol/config.ts';
import type { ClientOp, ConnectionInfo, OpenResult, TransportEvents } from '../../protocol/services/transport.ts';
import { headerParamsOf, type HeaderParam } from '../../protocol/rev2026-07-28/headers.ts';
import { INPUT_METHODS, MRTR_METHODS, MAX_INPUT_ROUNDS, inputRequestsSchema } from '../../protocol/client-input.ts';
import { negotiate, negotiateHttp } from '../negotiation/negotiate.ts';
import type { EraCache } from '../negotiation/era-cache.ts';
import { RpcPeer, WireError, wireCodeOf } from './rpc-peer.ts';
import { StdioLink } from './stdio-link.ts';
import { HttpLink } from './http-link.ts';
import { LinkAuth } from '../oauth/link-auth.ts';
import type { z } from 'zod';

export type Emit = <E extends keyof TransportEvents>(name: E, payload: TransportEvents[E]) => void;

const LIST_FOR_NOTIFICATION: Record<string, ListMethod[]> = {
  'notifications/tools/list_changed': ['tools/list'],
  'notifications/resources/list_changed': ['resources/list', 'resources/templates/list'],
  'notifications/prompts/list_changed': ['prompts/list'],
};
const JUNK_WARNINGS = 3;
/** subscriptions/listen: re-held after 1 s doubling to 60 s; a listen that lived 30 s counts as healthy; 8 short ones in a row give up. */
const LISTEN_BACKOFF_MS = 1_000;
const LISTEN_BACKOFF_MAX_MS = 60_000;
const LISTEN_HEALTHY_MS = 30_000;
const LISTEN_MAX_FAILURES = 8;
/** How long a legacy HTTP dial waits for its GET stream to be answered. */
const GET_STREAM_WAIT_MS = 2_000;

/** The embedder's side of the connection: the capabilities its handlers give, and a way to ask them. */
export interface ClientSide {
  capabilities: Record<string, unknown>;
  /** Runs the embedder's handler for one input request (elicitation/create, sampling/createMessage, roots/list). */
  ask(method: string, params: unknown, timeoutMs: number): Promise<Record<string, unknown>>;
}

const NO_CLIENT: ClientSide = {
  capabilities: {},
  ask: (method) => Promise.reject(new WireError(ErrorCode.MethodNotFound, `Method not found: ${method} (this client declares no capabilities)`)),
};

type Link = StdioLink | HttpLink;

interface Live {
  link: Link;
  peer: RpcPeer;
  info: ConnectionInfo;
}

export class Connection {
  readonly id: string;
  readonly server: ResolvedServer;
  #clientInfo: Implementation;
  #client: ClientSide;
  /** Modern HTTP: each tool's Mcp-Param-* headers, from its x-mcp-header annotations. */
  #headerParams = new Map<string, HeaderParam[]>();
  /** The JSON-RPC id of the held subscriptions/listen, which a server's notifications/cancelled may name. */
  #listenId: number | undefined;
  #cache: EraCache | null;
  #emit: Emit;
  #live: Live | undefined;
  #dialling: Promise<Live> | undefined;
  #catalogue: Catalogue = { tools: [], resources: [], resourceTemplates: [], prompts: [] };
  #rediscovering: Promise<void> | undefined;
  #again = new Set<ListMethod>();
  #closed = false;
  #reaping = new Set<Promise<void>>();
  #junk = { count: 0, sample: '' };
  #lastInfo: ConnectionInfo | undefined;
  #dialLink: Link | undefined;
  /** Warnings raised while opening, reported with the open result. */
  #openNotes: string[] = [];
  /** Settles when the first discovery has; rediscovery never races it. */
  #initial: Promise<void> = Promise.resolve();

  constructor(id: string, server: ResolvedServer, clientInfo: Implementation, cache: EraCache | null, emit: Emit, client: ClientSide = NO_CLIENT) {
    this.id = id;
    this.server = server;
    this.#clientInfo = clientInfo;
    this.#client = client;
    this.#cache = cache;
    this.#emit = emit;
  }

  /** Dials, negotiates and discovers everything. */
  async open(signal?: AbortSignal): Promise<OpenResult> {
    const warnings: string[] = this.#openNotes;
    const live = await this.#dial();
    const deadline = Date.now() + this.server.startupTimeoutMs;
    // List changes that arrive meanwhile wait for this first discovery (#rediscover awaits it).
    const discovering = this.#discoverAll(live, warnings, deadline, signal);
    this.#initial = discovering.then(() => undefined, () => undefined);
    const catalogue = await discovering;
    this.#catalogue = catalogue;
    if (live.info.era === 'modern') this.#listen(live);
    return { ...live.info, catalogue, warnings };
  }

  #dial(): Promise<Live> {
    if (this.#closed) return Promise.reject(new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} is closed`, { outcome: 'not_run' }));
    if (this.#live) return Promise.resolve(this.#live);
    this.#dialling ??= this.#dialOnce().finally(() => { this.#dialling = undefined; });
    return this.#dialling;
  }

  #linkAuth: LinkAuth | undefined;

  /** One OAuth state per connection (its DPoP nonce and token cache outlive a re-dial). */
  #auth(): LinkAuth | undefined {
    if (this.server.type !== 'http' || !this.server.auth) return undefined;
    this.#linkAuth ??= new LinkAuth(this.server.auth, this.server.url);
    return this.#linkAuth;
  }

  #newLink(getPeer: () => RpcPeer): Link {
    if (this.server.type === 'http') {
      const link: HttpLink = new HttpLink(this.server, {
        onMessage: (m, raw) => getPeer().receiveMessage(m, raw),
        onRequestFailed: (id, err) => getPeer().fail(id, err),
        onClose: (err) => this.#onLinkClosed(link, getPeer(), err),
        onWarn: (message) => this.#emit('connection/warned', { id: this.id, message }),
        headerParams: (name) => this.#headerParams.get(name),
      }, this.#auth());
      return link;
    }
    const link: StdioLink = new StdioLink(this.server, {
      onMessage: (line) => getPeer().receive(line),
      onClose: (err) => this.#onLinkClosed(link, getPeer(), err),
    });
    return link;
  }

  async #dialOnce(): Promise<Live> {
    let peer!: RpcPeer;
    const link = this.#newLink(() => peer);
    peer = new RpcPeer(link, {
      onRequest: (req) => this.#onServerRequest(req),
      onNotification: (n) => this.#onNotification(n),
      onJunk: (what, line) => this.#onJunk(what, line),
    });
    this.#dialLink = link;
    try {
      if (link instanceof StdioLink) await link.start();
      const cached = this.#cache?.get(this.server.fingerprint) ?? (this.#lastInfo ? { era: this.#lastInfo.era, protocolVersion: this.#lastInfo.protocolVersion } : null);
      const nopts = {
        clientInfo: this.#clientInfo,
        timeoutMs: this.server.startupTimeoutMs,
        cached,
        capabilities: this.#client.capabilities,
        explainSilence: () => this.#silenceHint(link),
      };
      const info = link instanceof HttpLink ? await negotiateHttp(peer, link, nopts) : await negotiate(peer, nopts);
      if (this.#closed) throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} was closed while it opened`, { outcome: 'not_run' });
      await this.#cache?.put(this.server.fingerprint, { era: info.era, protocolVersion: info.protocolVersion, at: Date.now() }).catch(() => {});
      const live: Live = { link, peer, info };
      this.#live = live;
      if (link instanceof HttpLink && info.era === 'legacy') {
        // Wait (briefly) until the GET stream is open or refused: some servers send their requests only there.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([link.openGetStream(), new Promise<void>((r) => { timer = setTimeout(r, GET_STREAM_WAIT_MS); })]);
        clearTimeout(timer);
      }
      this.#lastInfo = info;
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
    if (this.#junk.count) parts.push(`it wrote ${this.#junk.count} line(s) that are not JSON-RPC, the first: ${JSON.stringify(this.#junk.sample.slice(0, 120))}`);
    const tail = link instanceof StdioLink ? link.stderrTail.trim() : '';
    if (tail) parts.push(`its stderr ends:\n${tail}`);
    return parts.join('; ');
  }

  #reap(link: Link): void {
    const p = link.close().finally(() => this.#reaping.delete(p));
    this.#reaping.add(p);
  }

  #onLinkClosed(link: Link, peer: RpcPeer, err: AlbedoError | null): void {
    const reason = err ?? new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.id} was closed`, { outcome: 'unknown' });
    peer.close(reason);
    if (this.#live?.link !== link) return;
    this.#live = undefined;
    if (err && !this.#closed) {
      this.#emit('connection/dropped', { id: this.id, error: serializeError(err) });
      this.#reap(link);
    }
  }

  /** A legacy server's own request: ping is answered; input requests go to the embedder's handlers when it declared them. */
  async #onServerRequest(req: JsonRpcRequest): Promise<Record<string, unknown>> {
    if (req.method === 'ping') return {};
    const cap = INPUT_METHODS[req.method];
    if (!cap || !(cap in this.#client.capabilities)) {
      throw new WireError(ErrorCode.MethodNotFound, `Method not found: ${req.method} (this client did not declare ${cap ?? 'a capability for it'})`);
    }
    try {
      return await this.#client.ask(req.method, req.params ?? {}, this.server.callTimeoutMs);
    } catch (err) {
      if (err instanceof WireError) throw err;
      throw new WireError(ErrorCode.InternalError, `the client's ${cap} handler failed: ${(err as Error).message}`);
    }
  }

  #onNotification(n: JsonRpcNotification): void {
    const lists = LIST_FOR_NOTIFICATION[n.method];
    if (lists) this.#rediscover(lists);
    // A server ends a subscriptions/listen stream (on stdio) with notifications/cancelled for its id:
    // the subscription is over, as after its final result, and is not held again.
    if (n.method === 'notifications/cancelled') {
      const id = (n.params as { requestId?: unknown } | undefined)?.requestId;
      if (id !== undefined && id === this.#listenId) this.#live?.peer.settle(id as number, {});
    }
    // Other notifications (logging, progress, the listen acknowledgement) need no action here.
    void LISTEN_ACK;
  }

  #onJunk(what: string, line: string): void {
    this.#junk.count++;
    if (this.#junk.count === 1) this.#junk.sample = line;
    if (this.#junk.count <= JUNK_WARNINGS) {
      if (!this.#live) this.#openNotes.push(`ignored a line from the server (${what}): ${JSON.stringify(line.slice(0, 200))}`);
      this.#emit('connection/warned', { id: this.id, message: `ignored a line from the server (${what}): ${JSON.stringify(line.slice(0, 200))}` });
    }
  }

  #params(live: Live, params?: Record<string, unknown>): Record<string, unknown> | undefined {
    return live.info.era === 'modern' ? modernParams(params, this.#clientInfo, this.#client.capabilities) : legacyParams(params);
  }

  /**
   * One request with era params, checking resultType. An `input_required`
   * result (2026-07-28 MRTR) is fulfilled by the embedder's handlers and the
   * request retried on a new id with `inputResponses` and the byte-exact
   * `requestState`, for at most MAX_INPUT_ROUNDS rounds, all within `timeoutMs`.
   */
  async #request(live: Live, method: string, params: Record<string, unknown> | undefined, timeoutMs: number, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    let retry: Record<string, unknown> = {};
    for (let round = 0; ; round++) {
      const left = Math.max(1, deadline - Date.now());
      let result: Record<string, unknown>;
      try {
        result = await live.peer.request(method, this.#params(live, params === undefined && round === 0 ? undefined : { ...params, ...retry }), { timeoutMs: left, signal });
      } catch (err) {
        if (wireCodeOf(err) !== ErrorCode.MissingRequiredClientCapability) throw err;
        const required = ((err as AlbedoError).data as { data?: { requiredCapabilities?: unknown } }).data?.requiredCapabilities;
        throw new AlbedoError('ALBEDO_INPUT_REQUIRED', `${method} needs client capabilities this client did not declare${required ? ` (${JSON.stringify(required)})` : ''}: register a handler for them`, { outcome: 'not_run', data: { requiredCapabilities: required, server: (err as AlbedoError).data } });
      }
      const kind = resultTypeOf(result);
      if (kind === 'complete') return result;
      if (kind !== 'input_required') throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned an unknown resultType ${JSON.stringify(kind)}`);
      if (!MRTR_METHODS.has(method)) throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned resultType input_required, which only tools/call, prompts/get and resources/read may`);
      const parsed = inputRequestsSchema.safeParse(result.inputRequests ?? {});
      if (!parsed.success) throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned malformed inputRequests: ${describeZodError(parsed.error)}`);
      const requests = Object.entries(parsed.data);
      const undeclared = requests.filter(([, r]) => !(INPUT_METHODS[r.method]! in this.#client.capabilities));
      if (undeclared.length) {
        throw new AlbedoError('ALBEDO_INPUT_REQUIRED', `${method} needs input (${undeclared.map(([k, r]) => `${k}: ${r.method}`).join(', ')}) that this client has no handler for`, { outcome: 'not_run', data: { inputRequests: result.inputRequests } });
      }
      if (round + 1 >= MAX_INPUT_ROUNDS) throw new AlbedoError('ALBEDO_INPUT_REQUIRED', `${method} still asked for input after ${MAX_INPUT_ROUNDS} rounds; gave up`, { outcome: 'not_run' });
      const answers = await Promise.all(requests.map(async ([key, r]) => [key, await this.#client.ask(r.method, r.params ?? {}, Math.max(1, deadline - Date.now()))] as const));
      retry = {};
      if (result.inputRequests !== undefined) retry.inputResponses = Object.fromEntries(answers);
      if (typeof result.requestState === 'string') retry.requestState = result.requestState;
    }
  }

  async #list(live: Live, method: ListMethod, timeoutMs: number, warnings: string[], signal?: AbortSignal): Promise<unknown[]> {
    const field = LIST_FIELD[method];
    const schema = listSchemas[method] as z.ZodType<Record<string, unknown>>;
    const items: unknown[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const raw = await this.#request(live, method, cursor === undefined ? undefined : { cursor }, timeoutMs, signal);
      const parsed = schema.safeParse(raw);
      if (!parsed.success) throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned a malformed page: ${describeZodError(parsed.error)}`);
      items.push(...(method === 'tools/list' ? this.#acceptTools(live, parsed.data[field] as unknown[], warnings) : (parsed.data[field] as unknown[])));
      const next = parsed.data.nextCursor as string | undefined;
      if (next === undefined) return items;
      if (seen.has(next)) {
        warnings.push(`${method}: the server repeated cursor ${JSON.stringify(next)}; stopped after ${page + 1} pages`);
        return items;
      }
      seen.add(next);
      cursor = next;
    }
    warnings.push(`${method}: stopped after ${MAX_LIST_PAGES} pages; the list may be incomplete`);
    return items;
  }

  /**
   * Modern HTTP: a tool whose x-mcp-header annotations break the spec's rules
   * is left out, with a warning naming it and why; the others get their
   * Mcp-Param-* header lists.
   */
  #acceptTools(live: Live, tools: unknown[], warnings: string[]): unknown[] {
    if (!(live.link instanceof HttpLink) || live.info.era !== 'modern') return tools;
    return tools.filter((t) => {
      const tool = t as { name: string; inputSchema?: unknown };
      const r = headerParamsOf(tool.inputSchema);
      if (!r.ok) {
        const message = `left out tool ${JSON.stringify(tool.name)}: ${r.reason}`;
        warnings.push(message);
        if (this.#live) this.#emit('connection/warned', { id: this.id, message });
        this.#headerParams.delete(tool.name);
        return false;
      }
      if (r.params.length) this.#headerParams.set(tool.name, r.params);
      else this.#headerParams.delete(tool.name);
      return true;
    });
  }

  #listsFor(info: ConnectionInfo): ListMethod[] {
    const c = info.capabilities;
    const out: ListMethod[] = [];
    if (c.tools) out.push('tools/list');
    if (c.resources) out.push('resources/list', 'resources/templates/list');
    if (c.prompts) out.push('prompts/list');
    return out;
  }

  async #discoverAll(live: Live, warnings: string[], deadline: number, signal?: AbortSignal): Promise<Catalogue> {
    const cat: Catalogue = { tools: [], resources: [], resourceTemplates: [], prompts: [] };
    const results = await Promise.all(this.#listsFor(live.info).map(async (m) => {
      try {
        return [m, await this.#list(live, m, Math.max(1, deadline - Date.now()), warnings, signal)] as const;
      } catch (err) {
        // A server that declares resources but not templates (or similar) is common: note it, go on.
        if (AlbedoError.is(err) && (err.data as { code?: number } | undefined)?.code === ErrorCode.MethodNotFound) {
          warnings.push(`${m}: the server does not implement it`);
          return [m, [] as unknown[]] as const;
        }
        throw err;
      }
    }));
    for (const [m, items] of results) (cat as unknown as Record<string, unknown[]>)[LIST_FIELD[m]] = items;
    return cat;
  }

  /**
   * A modern server whose capabilities say a list can change gets one held
   * `subscriptions/listen`. A listen that breaks is held again after 1 s,
   * doubling to 60 s, and the lists are fetched again (changes may have been
   * missed meanwhile); eight short-lived listens in a row give up with a
   * warning. A server that ends the subscription with a result is left alone.
   */
  #listen(live: Live, failures = 0): void {
    const c = live.info.capabilities;
    const filter: ListenFilter = {};
    if (c.tools?.listChanged) filter.toolsListChanged = true;
    if (c.resources?.listChanged) filter.resourcesListChanged = true;
    if (c.prompts?.listChanged) filter.promptsListChanged = true;
    if (Object.keys(filter).length === 0) return;
    const started = Date.now();
    this.#listenId = live.peer.nextId;
    live.peer.request(LISTEN_METHOD, this.#params(live, { notifications: filter }), { timeoutMs: Infinity }).then(
      () => {},
      (err: AlbedoError) => {
        if (this.#live !== live || this.#closed) return;
        const n = Date.now() - started > LISTEN_HEALTHY_MS ? 1 : failures + 1;
        if (n >= LISTEN_MAX_FAILURES) {
          this.#emit('connection/warned', { id: this.id, message: `${LISTEN_METHOD} broke ${n} times in a row (last: ${err.message}); list changes will not be seen until the next reconnect` });
          return;
        }
        const wait = Math.min(LISTEN_BACKOFF_MS * 2 ** (n - 1), LISTEN_BACKOFF_MAX_MS);
        const timer = setTimeout(() => {
          if (this.#live !== live || this.#closed) return;
          this.#listen(live, n);
          this.#rediscover(this.#listsFor(live.info));
        }, wait);
        timer.unref?.();
      },
    );
  }

  #rediscover(lists: ListMethod[]): void {
    for (const l of lists) this.#again.add(l);
    if (this.#rediscovering) return;
    this.#rediscovering = (async () => {
      await this.#initial;
      while (this.#again.size && !this.#closed) {
        const todo = [...this.#again];
        this.#again.clear();
        const live = this.#live;
        if (!live) return;
        const fresh: Partial<Record<string, unknown[]>> = {};
        try {
          for (const m of todo) fresh[LIST_FIELD[m]] = await this.#list(live, m, this.server.callTimeoutMs, []);
        } catch (err) {
          this.#emit('connection/warned', { id: this.id, message: `rediscovery failed: ${(err as Error).message}` });
          continue;
        }
        // Merge into the catalogue as it is now: only the lists just fetched are replaced.
        const next = { ...this.#catalogue, ...fresh } as Catalogue;
        if (JSON.stringify(next) !== JSON.stringify(this.#catalogue)) {
          this.#catalogue = next;
          this.#emit('connection/catalogue-changed', { id: this.id, catalogue: next });
        }
      }
    })().finally(() => { this.#rediscovering = undefined; });
  }

  /** Runs one operation, dialling again first when the server dropped. */
  async request(op: ClientOp, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const wasDropped = !this.#live && this.#lastInfo !== undefined;
    const live = await this.#dial();
    if (wasDropped) this.#afterRedial(live);
    switch (op.method) {
      case 'tools/list':
      case 'resources/list':
      case 'resources/templates/list':
      case 'prompts/list':
        return this.#list(live, op.method, timeoutMs, [], signal);
      case 'tools/call':
        return this.#checked(callToolResultSchema, op.method, await this.#callTool(live, op.name, op.arguments ?? {}, timeoutMs, signal));
      case 'resources/read':
        return this.#checked(readResourceResultSchema, op.method, await this.#request(live, op.method, { uri: op.uri }, timeoutMs, signal));
      case 'prompts/get':
        return this.#checked(getPromptResultSchema, op.method, await this.#request(live, op.method, { name: op.name, arguments: op.arguments ?? {} }, timeoutMs, signal));
      case 'ping':
        // 2026-07-28 removed ping: a modern server's liveness is a server/discover answer.
        return live.info.era === 'modern'
          ? this.#request(live, DISCOVER_METHOD, undefined, timeoutMs, signal).then(() => ({}))
          : this.#request(live, 'ping', undefined, timeoutMs, signal);
      default:
        throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `unknown operation ${(op as { method: string }).method}`, { outcome: 'not_run' });
    }
  }

  /**
   * A tools/call refused with HeaderMismatch (-32020) did not run: as the
   * spec advises, the tool list is fetched again (the tool's x-mcp-header
   * annotations may have changed) and the call is sent once more.
   */
  async #callTool(live: Live, name: string, args: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    try {
      return await this.#request(live, 'tools/call', { name, arguments: args }, timeoutMs, signal);
    } catch (err) {
      if (!(live.link instanceof HttpLink) || wireCodeOf(err) !== ErrorCode.HeaderMismatch || Date.now() >= deadline) throw err;
      await this.#list(live, 'tools/list', Math.max(1, deadline - Date.now()), [], signal);
      return this.#request(live, 'tools/call', { name, arguments: args }, Math.max(1, deadline - Date.now()), signal);
    }
  }

  /** After a redial: a modern server's listen is re-held, and the catalogue is checked in the background. */
  #afterRedial(live: Live): void {
    if (live.info.era === 'modern') this.#listen(live);
    this.#rediscover(this.#listsFor(live.info));
  }

  #checked<T>(schema: z.ZodType<T>, method: string, raw: Record<string, unknown>): T {
    const r = schema.safeParse(raw);
    if (!r.success) throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned a malformed result: ${describeZodError(r.error)}`);
    return r.data;
  }

  get catalogue(): Catalogue {
    return this.#catalogue;
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
