/**
 * A JSON-RPC 2.0 peer over a line link: numbers requests, matches
 * responses, times requests out (dropping them and telling the server with
 * `notifications/cancelled`), and answers the server's own requests through
 * one handler. Era-agnostic: callers build the params.
 */
import {
  classify,
  ErrorCode,
  type JsonRpcRequest,
  type JsonRpcNotification,
  type RequestId,
  type JsonRpcErrorObject,
} from '../../protocol/jsonrpc.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { serverError, type Requester, type RequestOptions } from '../../protocol/requester.ts';
import type { Secrets } from '../../protocol/redact.ts';

export interface PeerLink {
  send(message: unknown): void;
  /** A link whose own way of cancelling is closing the request's stream (modern HTTP) does it and returns true. */
  cancelRequest?(id: RequestId): boolean;
  /** The peer no longer waits for this request: the link may stop reading its answer. */
  forget?(id: RequestId): void;
  /**
   * Takes back a request that is still queued and was never written (a stdio
   * server that stopped reading): true means the server cannot have seen it.
   */
  withdraw?(id: RequestId): boolean;
}

/**
 * One request waiting for its answer. A plain object of one shape, holding what its timeout, its
 * caller's abort and its answer need: no closures of its own (it is its own abort listener, through
 * the one `handleEvent` every pending request shares).
 */
interface Pending {
  peer: RpcPeer;
  id: number;
  method: string;
  resolve(result: Record<string, unknown>): void;
  reject(err: unknown): void;
  /** When it times out (performance.now()), Infinity for never. */
  deadline: number;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  cancelOnTimeout: boolean;
  handleEvent(this: Pending): void;
}

/** A timer that fires this close to a deadline counts it as reached (timers run on the event loop's cached clock). */
const DEADLINE_SLACK_MS = 1;
/** The longest delay setTimeout takes (2^31 - 1 ms). */
const TIMER_MAX_MS = 2 ** 31 - 1;

/** A JSON-RPC error to send back to the server. */
export class WireError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export interface PeerHandlers {
  /**
   * Answers one of the server's requests. `signal` aborts when the server
   * cancels it (notifications/cancelled naming its id) or the peer closes.
   */
  onRequest(req: JsonRpcRequest, signal: AbortSignal, tag?: string): Promise<Record<string, unknown>> | Record<string, unknown>;
  onNotification(n: JsonRpcNotification): void;
  /** A line that is not a JSON-RPC message, or a response nobody waits for. */
  onJunk(what: string, line: string): void;
  /**
   * Values the server was given that may be secrets (the connection's live set): cut out of its
   * error messages before they are cut short.
   */
  secrets?: Secrets;
}

/** How many of the server's own requests are served at once; more are dropped with a warning. */
export const MAX_SERVING = 64;

/** The length of the text each list result arrived in, for bounding catalogues without serialising them again. */
const wireSizes = new WeakMap<object, number>();

/**
 * How many characters of JSON text a list result (`…/list`) arrived in;
 * undefined for any other result, and for one that did not come from a peer.
 * (Only lists are bounded by size: a weak entry for every call's result would be garbage the collector must sweep.)
 */
export function wireSizeOf(result: object): number | undefined {
  return wireSizes.get(result);
}

export class RpcPeer implements Requester {
  #link: PeerLink;
  #handlers: PeerHandlers;
  #pending = new Map<RequestId, Pending>();
  /**
   * One timer for every pending request's timeout, armed for the earliest deadline (a timer per request
   * was an allocation, a timer-list insert and a removal per call). It holds the event loop only while
   * a request with a deadline is pending, as those requests' own timers did.
   */
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  /** Pending requests with a finite deadline. */
  #timed = 0;
  /** The server's requests being answered, by id: a cancellation aborts the handler's signal. */
  #serving = new Map<RequestId, AbortController>();
  #nextId = 1;
  #closedWith: AlbedoError | undefined;

  constructor(link: PeerLink, handlers: PeerHandlers) {
    this.#link = link;
    this.#handlers = handlers;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  /** Feeds one line read from the link. */
  receive(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.#handlers.onJunk('not JSON', line);
      return;
    }
    this.receiveMessage(value, line);
  }

  /** Feeds one parsed message (`raw` is its text, for warnings; `tag`: the call whose stream carried it). */
  receiveMessage(value: unknown, raw: string, tag?: string): void {
    const line = raw;
    const c = classify(value);
    switch (c.kind) {
      case 'response': {
        const id = c.message.id;
        const p = id === null ? undefined : this.#pending.get(id);
        if (!p) {
          this.#handlers.onJunk('a response to no pending request', line);
          return;
        }
        this.#pending.delete(id!);
        this.#release(p);
        if ('error' in c.message) p.reject(serverError(p.method, c.message.error, this.#handlers.secrets));
        else {
          if (p.method.endsWith('/list')) wireSizes.set(c.message.result, line.length);
          p.resolve(c.message.result);
        }
        return;
      }
      case 'request':
        void this.#answer(c.message, tag);
        return;
      case 'notification':
        if (c.message.method === 'notifications/cancelled') {
          const id = c.message.params?.requestId;
          if ((typeof id === 'string' || typeof id === 'number') && this.#serving.has(id)) {
            this.#serving.get(id)!.abort(new AlbedoError('ALBEDO_TIMEOUT', 'the server cancelled its request', { outcome: 'unknown' }));
          }
        }
        this.#handlers.onNotification(c.message);
        return;
      case 'invalid': {
        // A response to a pending request that is malformed (a string or an array for `result`):
        // fail that request now rather than let it wait for its timeout (or, for a listen, forever).
        const id = (value as { id?: unknown } | null)?.id;
        const isResponse = value !== null && typeof value === 'object' && !('method' in (value as object));
        const p = isResponse && (typeof id === 'string' || typeof id === 'number') ? this.#pending.get(id) : undefined;
        if (p) {
          this.#pending.delete(id as RequestId);
          this.#release(p);
          p.reject(
            new AlbedoError('ALBEDO_INVALID_RESPONSE', `${p.method}: the server's response is malformed (${c.reason})`, {
              outcome: 'unknown',
            }),
          );
          return;
        }
        this.#handlers.onJunk(c.reason, line);
      }
    }
  }

  async #answer(req: JsonRpcRequest, tag?: string): Promise<void> {
    if (this.#serving.size >= MAX_SERVING && !this.#serving.has(req.id)) {
      // A storm of requests would pin a handler call (and its params) each: past the bound they are not served.
      this.#handlers.onJunk(
        `more than ${MAX_SERVING} of its requests at once; this one was dropped`,
        `${req.method} ${JSON.stringify(req.id)}`,
      );
      return;
    }
    let reply: unknown;
    const ac = new AbortController();
    // A server reusing the id of a request still being answered: the older one is cancelled.
    this.#serving.get(req.id)?.abort(new AlbedoError('ALBEDO_TIMEOUT', 'the server reused this request id', { outcome: 'unknown' }));
    this.#serving.set(req.id, ac);
    try {
      const result = await this.#handlers.onRequest(req, ac.signal, tag);
      if (ac.signal.aborted) return; // the server cancelled it: no answer is expected
      reply = { jsonrpc: '2.0', id: req.id, result };
    } catch (err) {
      if (ac.signal.aborted) return;
      const e = err instanceof WireError ? err : new WireError(ErrorCode.InternalError, 'internal error');
      const error: JsonRpcErrorObject = { code: e.code, message: e.message };
      if (e.data !== undefined) error.data = e.data;
      reply = { jsonrpc: '2.0', id: req.id, error };
    } finally {
      if (this.#serving.get(req.id) === ac) this.#serving.delete(req.id);
    }
    if (this.#closedWith) return;
    try {
      this.#link.send(reply);
    } catch {
      // The link went down meanwhile; nothing to answer to.
    }
  }

  /** Sends a request; resolves with the raw result or rejects with an AlbedoError. */
  request(method: string, params: Record<string, unknown> | undefined, opts: RequestOptions): Promise<Record<string, unknown>> {
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<Record<string, unknown>>();
    const signal = opts.signal;
    // A long-lived request (subscriptions/listen) passes Infinity: no deadline at all.
    const deadline = Number.isFinite(opts.timeoutMs) ? performance.now() + opts.timeoutMs : Infinity;
    const p: Pending = {
      peer: this,
      id,
      method,
      resolve,
      reject,
      deadline,
      timeoutMs: opts.timeoutMs,
      signal,
      cancelOnTimeout: opts.cancelOnTimeout !== false,
      handleEvent: RpcPeer.#onAbort,
    };
    if (deadline !== Infinity) this.#arm(deadline);
    this.#pending.set(id, p);
    if (signal?.aborted) {
      this.#giveUp(p, abortedError(p));
      return promise;
    }
    signal?.addEventListener('abort', p, ONCE);
    const message: Record<string, unknown> = { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    try {
      this.#link.send(message);
    } catch (err) {
      this.#pending.delete(id);
      this.#release(p);
      const why = `cannot send ${method}: ${(err as Error).message}`;
      reject(AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_CONNECTION_CLOSED', why, { outcome: 'not_run' }));
    }
    return promise;
  }

  /** The caller's signal aborted (`this` is the pending request, its own listener). */
  static #onAbort = function (this: Pending): void {
    this.peer.#giveUp(this, abortedError(this));
  };

  /** The request is no longer waited for: it times out or its caller gave up. */
  #giveUp(p: Pending, err: AlbedoError): void {
    if (!this.#pending.delete(p.id)) return;
    this.#release(p);
    if (this.#link.withdraw?.(p.id) === true) {
      // Never written: the server cannot have run it, and there is nothing to cancel.
      const why = `${err.message} (it was never sent: the server is not reading its input)`;
      p.reject(new AlbedoError(err.code, why, { outcome: 'not_run', data: err.data, cause: err.cause }));
      return;
    }
    if (p.cancelOnTimeout && this.#link.cancelRequest?.(p.id) !== true) {
      this.notify('notifications/cancelled', { requestId: p.id, reason: err.message });
    }
    this.#link.forget?.(p.id);
    p.reject(err);
  }

  /** A request with `deadline` is pending: the timer fires by then. */
  #arm(deadline: number): void {
    if (++this.#timed === 1) this.#timer?.ref();
    if (deadline < this.#timerAt) this.#schedule(deadline);
  }

  #schedule(deadline: number): void {
    clearTimeout(this.#timer);
    this.#timerAt = deadline;
    // Past setTimeout's maximum Node would fire at once: the timer wakes at the maximum and is armed again.
    this.#timer = setTimeout(this.#onTimer, Math.min(TIMER_MAX_MS, Math.max(1, Math.ceil(deadline - performance.now()))));
  }

  /** A pending request is settled, one way or another: it no longer listens to its signal or needs the timer. */
  #release(p: Pending): void {
    p.signal?.removeEventListener('abort', p);
    // The timer stays armed (re-arming it for every request cost as much as a timer each) but lets the loop end.
    if (p.deadline !== Infinity && --this.#timed === 0) this.#timer?.unref();
  }

  /** Times out every request past its deadline, and arms the timer for the next one. */
  #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    if (this.#timed === 0) return;
    const now = performance.now() + DEADLINE_SLACK_MS;
    let next = Infinity;
    let due: Pending[] | undefined;
    for (const p of this.#pending.values()) {
      if (p.deadline <= now) (due ??= []).push(p);
      else if (p.deadline < next) next = p.deadline;
    }
    if (next !== Infinity) this.#schedule(next);
    if (due) for (const p of due) this.#giveUp(p, timeoutError(p));
  };

  /** Sends a notification; a link that is down swallows it. */
  notify(method: string, params?: Record<string, unknown>): void {
    if (this.#closedWith) return;
    const message: Record<string, unknown> = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    try {
      this.#link.send(message);
    } catch {
      // Best effort by definition.
    }
  }

  /** The id the next request will get (subscriptions are named by their request id). */
  get nextId(): number {
    return this.#nextId;
  }

  /** Settles one pending request as if `result` had arrived (a server ended a subscription another way). */
  settle(id: RequestId, result: Record<string, unknown>): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    this.#release(p);
    p.resolve(result);
  }

  /** Fails one pending request: the link knows its answer can no longer come. */
  fail(id: RequestId, err: AlbedoError): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    this.#release(p);
    p.reject(err);
  }

  /** Fails every pending request with `err`; later requests fail the same way. */
  close(err: AlbedoError): void {
    this.#closedWith ??= err;
    for (const ac of this.#serving.values()) ac.abort(err);
    this.#serving.clear();
    for (const [id, p] of this.#pending) {
      this.#pending.delete(id);
      this.#release(p);
      p.reject(err);
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }
}

const ONCE = { once: true } as const;

function abortedError(p: Pending): AlbedoError {
  return new AlbedoError('ALBEDO_TIMEOUT', `${p.method} was cancelled by the caller`, { outcome: 'unknown', cause: p.signal?.reason });
}

function timeoutError(p: Pending): AlbedoError {
  return new AlbedoError(
    'ALBEDO_TIMEOUT',
    `${p.method} got no answer within ${p.timeoutMs} ms; it was cancelled and its outcome is unknown`,
    { outcome: 'unknown', data: { method: p.method, timeoutMs: p.timeoutMs } },
  );
}
