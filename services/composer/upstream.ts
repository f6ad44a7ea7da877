/**
 * One session's connection to one server (a transport connection actor, by
 * id). It dials once however many callers wait (single flight), lets a call
 * that arrives during a dial wait for it within the call's budget, dials
 * again for a call when the server was unreachable, dropped or its worker
 * lost, and tells its owner (the server's slot in the session) what it
 * observed. A request is never sent twice unless the transport said it did
 * not run; a lost transport mid-call is an unknown outcome, passed through.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { Catalogue } from '../../protocol/mcp.ts';
import type { ClientOp, OpenResult } from '../../protocol/services/transport.ts';
import type { ComposerServer, TransportPort } from './ports.ts';
import { connectRetry, type RetryProgress } from './connect-retry.ts';
import { isSharedId } from './shared-port.ts';

/** Who is told what the connection observed: the server's slot in the composition that owns the connection now. */
export interface UpstreamOwner {
  opened(result: OpenResult): void;
  failed(err: AlbedoError): void;
  dropped(err: AlbedoError): void;
  catalogueChanged(catalogue: Catalogue): void;
  warned(message: string, code?: string): void;
  /** The first dial failed for a reason that may pass and is tried again (connect-retry.ts): when, and which attempt. */
  retrying?(progress: RetryProgress): void;
}

type State = 'idle' | 'dialling' | 'open' | 'closed';

const asError = (err: unknown): AlbedoError =>
  AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_INTERNAL', err instanceof Error ? err.message : String(err), { outcome: 'unknown' });

/** A failed dial as a call's error: the call did not run; the dial's code and data stay, marked unavailable. */
export function unavailable(server: string, err: AlbedoError): AlbedoError {
  if (err.code === 'ALBEDO_CLOSED') return err;
  const data = typeof err.data === 'object' && err.data !== null && !Array.isArray(err.data) ? err.data : {};
  return new AlbedoError(err.code, `server ${JSON.stringify(server)} is unavailable: ${err.message}`, {
    outcome: 'not_run',
    data: { ...data, server, unavailable: true },
  });
}

/**
 * The transport's answer when the connection's actor is gone (its worker lost): not found, not run.
 * A server that lacks an operation's capability answers so too, with `data.capability`: that one
 * is final, never sent again nor dialled for.
 */
export function actorGone(e: AlbedoError): boolean {
  return (
    e.code === 'ALBEDO_NOT_FOUND' && e.outcome === 'not_run' && (e.data as { capability?: unknown } | undefined)?.capability === undefined
  );
}

export interface UpstreamRequest {
  /** The MCP request's timeout. */
  timeoutMs: number;
  /** The whole call's budget from its arrival: a dial it waits for or starts counts against it. */
  budgetMs: number;
  signal?: AbortSignal;
}

export class Upstream {
  readonly id: string;
  entry: ComposerServer;
  owner: UpstreamOwner;
  #transport: TransportPort;
  #state: State = 'idle';
  #dial: Promise<OpenResult> | undefined;
  #inflight = 0;
  #drained: Array<() => void> = [];
  #closing: Promise<void> | undefined;
  /** The transport may hold an actor for it (an open succeeded, or one is running): close must reach it. */
  #held = false;
  /** A connection a previous composer incarnation opened: its first dial asks the transport whether it is still open. */
  #resumable: boolean;
  #capabilities: Record<string, unknown> | undefined;
  /** Its first open was tried, or it resumed a live one: later opens (a probe, a call's dial) make one attempt (connect-retry.ts). */
  #dialled = false;
  /** Aborted by close: a connect retry it takes part in stops waiting for it. */
  #leaving = new AbortController();

  constructor(
    id: string,
    entry: ComposerServer,
    transport: TransportPort,
    owner: UpstreamOwner,
    opts: { resumable?: boolean; capabilities?: Record<string, unknown> } = {},
  ) {
    this.id = id;
    this.#capabilities = opts.capabilities;
    this.entry = entry;
    this.#transport = transport;
    this.owner = owner;
    this.#resumable = opts.resumable === true;
    this.#held = this.#resumable;
  }

  /** Resumes a connection still open in the transport (a restarted composer); null when there is none to resume. */
  async #resume(): Promise<OpenResult | null> {
    if (!this.#resumable || !this.#transport.info) return null;
    this.#resumable = false;
    return this.#transport.info(this.id).catch(() => null);
  }

  get state(): State {
    return this.#state;
  }

  /** A method, not a comparison in place: the state changes across awaits. */
  #isClosed(): boolean {
    return this.#state === 'closed';
  }

  /** Dials unless the connection is open or a dial runs (then that one is returned). The owner is told the outcome. */
  dial(): Promise<OpenResult | undefined> {
    if (this.#state === 'closed') return Promise.reject(new AlbedoError('ALBEDO_CLOSED', 'the session is closed', { outcome: 'not_run' }));
    if (this.#state === 'open') return Promise.resolve(undefined);
    this.#dial ??= this.#dialOnce().finally(() => {
      this.#dial = undefined;
    });
    return this.#dial;
  }

  async #dialOnce(): Promise<OpenResult> {
    this.#state = 'dialling';
    const resumed = await this.#resume();
    if (this.#isClosed())
      throw new AlbedoError('ALBEDO_CLOSED', 'the session was closed while its connection was resumed', { outcome: 'not_run' });
    if (resumed) {
      this.#state = 'open';
      this.#dialled = true;
      this.owner.opened(resumed);
      return resumed;
    }
    this.#held = true;
    const first = !this.#dialled;
    this.#dialled = true;
    let result: OpenResult;
    try {
      const o = { name: this.entry.name, isolate: this.entry.isolate, capabilities: this.#capabilities };
      // The first open runs in the server's connect-retry episode (or waits for the one another session runs).
      const attempt = (): Promise<OpenResult> => this.#transport.open(this.id, this.entry.server, o);
      const progress = (p: RetryProgress): void => this.owner.retrying?.(p);
      result = await connectRetry<OpenResult>().open(
        this.entry.fingerprint,
        { attempt, signal: this.#leaving.signal, progress, windowMs: this.entry.startupTimeoutMs },
        first,
      );
    } catch (err) {
      const e = asError(err);
      // A failed open leaves nothing behind in the transport (its actor was closed, its key released).
      this.#held = false;
      if (!this.#isClosed()) {
        this.#state = 'idle';
        this.owner.failed(e);
      }
      throw e;
    }
    if (this.#isClosed()) {
      // Closed while it dialled: a close that overtook the open must not leave the server running.
      await this.#transport.close(this.id).catch(() => {});
      throw new AlbedoError('ALBEDO_CLOSED', 'the session was closed while the server was dialled', { outcome: 'not_run' });
    }
    this.#state = 'open';
    this.owner.opened(result);
    return result;
  }

  /** Waits for `p` within `ms` (and `signal`); past it the call gives up without having run, the dial goes on. */
  async #within<T>(p: Promise<T>, ms: number, signal: AbortSignal | undefined): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      const late = (): void =>
        reject(new AlbedoError('ALBEDO_TIMEOUT', `${this.entry.name} did not become ready within ${ms} ms`, { outcome: 'not_run' }));
      timer = setTimeout(late, Math.max(0, ms));
      onAbort = () => reject(new AlbedoError('ALBEDO_DEADLINE', 'the call was cancelled before it was sent', { outcome: 'not_run' }));
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([p, gaveUp]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Runs one operation. A connection that is not open is dialled first (or
   * the running dial is waited for), within the call's budget; a dial that
   * fails makes the call fail as not run, "unavailable", with the dial's code.
   */
  async request(op: ClientOp, opts: UpstreamRequest): Promise<unknown> {
    const deadline = Date.now() + opts.budgetMs;
    this.#inflight++;
    try {
      for (let attempt = 0; ; attempt++) {
        if (this.#state !== 'open') {
          try {
            await this.#within(this.dial(), deadline - Date.now(), opts.signal);
          } catch (err) {
            if (opts.signal?.aborted) throw err;
            throw unavailable(this.entry.name, asError(err));
          }
        }
        const timeoutMs = Math.max(1, Math.min(opts.timeoutMs, deadline - Date.now()));
        try {
          return await this.#transport.request(this.id, op, {
            timeoutMs,
            startupTimeoutMs: this.entry.startupTimeoutMs,
            signal: opts.signal,
          });
        } catch (err) {
          const e = asError(err);
          // The actor is gone (its worker was lost before we heard of it): the request did not run, so it may be sent once more.
          if (actorGone(e) && attempt === 0 && this.state === 'open') {
            this.#state = 'idle';
            continue;
          }
          throw e;
        }
      }
    } finally {
      this.#inflight--;
      if (this.#inflight === 0) for (const done of this.#drained.splice(0)) done();
    }
  }

  /**
   * The server dropped (or, `lost`, its worker was lost with the actor): the
   * next call dials again. After a drop the actor is still there, and a call
   * sent to it directly may have dialled it again already: the next dial asks
   * the transport first (`connection/info`) and keeps a live actor rather
   * than replacing it (which would cut that call).
   */
  onDropped(err: AlbedoError, lost = false): void {
    if (this.#state !== 'open') return;
    this.#state = 'idle';
    if (!lost) this.#resumable = true;
    this.owner.dropped(err);
  }

  onCatalogue(catalogue: Catalogue): void {
    if (this.#state === 'open') this.owner.catalogueChanged(catalogue);
  }

  /** Closes the connection (and so reaps the server) once the calls in flight on it have settled. */
  async retire(): Promise<void> {
    if (this.#inflight > 0) await new Promise<void>((r) => this.#drained.push(r));
    // Calls sent straight to the transport by the owner's thread (the direct path) settle too.
    await this.#transport.drain?.(this.id).catch(() => {});
    await this.close();
  }

  /** Closes now: calls in flight fail as the transport reports them. Resolves once the server is reaped. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const dialling = this.#dial;
      this.#state = 'closed';
      this.#leaving.abort();
      // A shared connection's close is always told: the last holder leaving closes it (shared-port.ts).
      if (this.#held || isSharedId(this.id)) await this.#transport.close(this.id).catch(() => {});
      await dialling?.catch(() => {});
    })();
    return this.#closing;
  }
}
