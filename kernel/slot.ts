/**
 * One supervised worker thread: a pool slot of a service. It owns the
 * worker's lifecycle (start, ready handshake, liveness, restart with backoff
 * and an intensity limit, a retry after a cool-down once the limit is
 * passed), the calls in flight on it, and the calls its worker made to other
 * services. A reply or event from an older incarnation is dropped.
 *
 * Envelopes are batched: everything posted to the worker in one turn of the
 * event loop goes as one `postMessage` (an array, in order), and the worker
 * batches its side the same way. The flush waits for `setImmediate`, not a
 * microtask: Node runs microtasks after each message it delivers, so a
 * microtask flush sent one envelope per message once calls and replies were
 * pipelined (32 no-op calls in flight: 1.0 envelope per message, 107 k
 * calls/s); after the loop's I/O phase every reply that came in has been
 * handled and the calls they led to go together (292 k calls/s). A call queued
 * but not yet flushed is not sent: abandoning it then sends no cancel, and
 * a worker lost before the flush leaves it to the next incarnation.
 */
import { Worker } from 'node:worker_threads';
import { AlbedoError, deserializeError, serializeError, type SerializedError } from '../protocol/errors.ts';
import type { FromWorker, ToWorker, WorkerBoot, LostCause } from '../protocol/services/envelope.ts';
import { workerEntry } from './compile-cache.ts';

// Each worker starts with the compile caches on, so the host and its service load stripped already (kernel/compile-cache.ts).
const HOST = workerEntry(new URL('./worker-host.ts', import.meta.url));

export interface RestartPolicy {
  /** At most this many restarts… */
  intensity: number;
  /** …within this many milliseconds; past it the slot fails (escalates) until its cool-down has passed. */
  periodMs: number;
  /** First restart delay, doubling per restart inside the period, capped at maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
  /**
   * How long a failed slot stays down before one more start is tried. The
   * pool is the parent that OTP would escalate to, and it must keep serving:
   * a slot is never given up for good. A retry that fails before it is ready
   * fails the slot again for another cool-down.
   */
  coolDownMs: number;
}

export interface SlotOptions {
  service: string;
  module: string;
  instance: number;
  options: unknown;
  restart: RestartPolicy;
  heartbeat: { intervalMs: number; timeoutMs: number };
  startTimeoutMs: number;
  dedicated: boolean;
  /** Fault injection is on: the worker acts on `fault` envelopes and answers the test-only methods (WorkerBoot.faults). */
  faults: boolean;
  onEvent(slot: Slot, name: string, payload: unknown): void;
  /** Routes a worker's call to another service; `signal` aborts when the worker cancels it or is lost. */
  onOutbound(slot: Slot, m: Extract<FromWorker, { kind: 'outbound' }>, signal: AbortSignal): Promise<unknown>;
  /** The worker released a key of another service. */
  onRelease(slot: Slot, service: string, key: string): void;
  onLifecycle(slot: Slot, what: 'lost' | 'restarted' | 'failed', reason: string, cause?: LostCause): void;
}

/** How many envelopes crossed, in how many messages (each way), for tests and the bench. */
export interface WireStats {
  messagesOut: number;
  envelopesOut: number;
  messagesIn: number;
  envelopesIn: number;
}

export interface Pending {
  id: number;
  method: string;
  params: unknown;
  deadline: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** Posted to the worker (the batch it was in was flushed). */
  sent: boolean;
}

export type SlotState = 'starting' | 'ready' | 'backoff' | 'failed' | 'stopped';

export class Slot {
  readonly opts: SlotOptions;
  readonly keys = new Set<string>();
  state: SlotState = 'starting';
  incarnation = 0;
  #worker: Worker | undefined;
  #inflight = new Map<number, Pending>();
  #restarts: number[] = [];
  #heartbeat: NodeJS.Timeout | undefined;
  #startTimer: NodeJS.Timeout | undefined;
  #backoffTimer: NodeJS.Timeout | undefined;
  #coolDownTimer: NodeJS.Timeout | undefined;
  /** This incarnation is the retry after a cool-down: not chosen for keys until it is ready. */
  #probing = false;
  /** The calls this incarnation's worker made to other services, by its outbound id. */
  #outbound = new Map<number, AbortController>();
  #lastPong = 0;
  #pingSeq = 0;
  #lastError = '';
  #lastCause: LostCause = 'exit';
  #stopping: Promise<void> | undefined;
  /** Envelopes posted this turn, flushed as one message after the loop's I/O phase. */
  #queue: ToWorker[] = [];
  #flushing = false;
  readonly #flush = (): void => this.#flushNow();
  readonly wire: WireStats = { messagesOut: 0, envelopesOut: 0, messagesIn: 0, envelopesIn: 0 };
  /** What the worker sent, not handled yet: a batch is handled in order, pausing after replies (#drain). */
  #inbox: FromWorker[] = [];
  #paused = false;
  readonly #resume = (): void => {
    this.#paused = false;
    this.#drain();
  };

  constructor(opts: SlotOptions) {
    this.opts = opts;
    this.#spawn();
  }

  get inflight(): number {
    return this.#inflight.size;
  }

  get threadId(): number | undefined {
    return this.#worker?.threadId;
  }

  /** May take new keys: not failed, not stopped, and not a cool-down retry that has yet to prove itself. */
  get healthy(): boolean {
    return this.state !== 'failed' && this.state !== 'stopped' && !this.#probing;
  }

  #spawn(): void {
    this.incarnation++;
    this.state = 'starting';
    const { service, module, instance, options, faults } = this.opts;
    const boot: WorkerBoot = { service, module, instance, inc: this.incarnation, options, faults };
    const w = new Worker(HOST, { workerData: boot, stderr: false, stdout: false });
    this.#worker = w;
    const inc = this.incarnation;
    this.#lastError = '';
    this.#lastCause = 'exit';
    w.on('message', (batch: FromWorker[]) => {
      if (w !== this.#worker) return;
      this.wire.messagesIn++;
      this.wire.envelopesIn += batch.length;
      for (const m of batch) this.#inbox.push(m);
      if (!this.#paused) this.#drain();
    });
    w.on('error', (err) => {
      // A `fatal` envelope said it better already.
      if (w === this.#worker && !this.#lastError) {
        this.#lastError = err?.message ?? String(err);
        this.#lastCause = 'error';
      }
    });
    w.on('exit', (code) => {
      if (w !== this.#worker || inc !== this.incarnation) return;
      this.#onExit(code);
    });
    this.#startTimer = setTimeout(() => {
      if (this.state === 'starting' && w === this.#worker) {
        this.#lastError = `did not become ready within ${this.opts.startTimeoutMs} ms`;
        this.#lastCause = 'start_timeout';
        void w.terminate();
      }
    }, this.opts.startTimeoutMs);
    this.#startTimer.unref();
  }

  /**
   * Handles the inbox in order. Resolving a reply only queues its caller's
   * continuation, while an event's listeners run at once: so after a reply,
   * anything but another reply waits for `setImmediate`, when the callers
   * have run. Unbatched, Node ran microtasks between the two messages, and
   * the embedding API relies on that order (it registers a connection when
   * `connection/open` answers, and an event about it may follow at once).
   */
  #drain(): void {
    const box = this.#inbox;
    let replied = false;
    for (let i = 0; i < box.length; i++) {
      const m = box[i]!;
      if (replied && m.kind !== 'reply') {
        this.#inbox = box.slice(i);
        this.#paused = true;
        setImmediate(this.#resume);
        return;
      }
      if (m.kind === 'reply') replied = true;
      // A stale incarnation's envelope is dropped; one handled may have stopped or replaced the worker.
      if (m.inc === this.incarnation && this.#worker) this.#onMessage(m);
    }
    this.#inbox = [];
  }

  #onMessage(m: FromWorker): void {
    switch (m.kind) {
      case 'ready': {
        if (this.state === 'stopped') return;
        clearTimeout(this.#startTimer);
        const restarted = this.incarnation > 1;
        this.#probing = false;
        this.state = 'ready';
        this.#lastPong = Date.now();
        this.#startHeartbeat();
        for (const p of this.#inflight.values()) if (!p.sent) this.#send(p);
        if (restarted) this.opts.onLifecycle(this, 'restarted', 'ready again');
        break;
      }
      case 'fatal':
        this.#lastError = m.reason;
        this.#lastCause = m.cause;
        break;
      case 'outbound':
        this.#outboundCall(m);
        break;
      case 'release':
        this.opts.onRelease(this, m.service, m.key);
        break;
      case 'outbound-cancel': {
        const ac = this.#outbound.get(m.id);
        this.#outbound.delete(m.id);
        ac?.abort(new AlbedoError('ALBEDO_DEADLINE', 'the calling worker gave up on this call', { outcome: 'unknown' }));
        break;
      }
      case 'reply': {
        const p = this.#inflight.get(m.id);
        if (!p) return;
        this.#inflight.delete(m.id);
        if (m.ok) p.resolve(m.value);
        else p.reject(deserializeError(m.error!));
        break;
      }
      case 'pong':
        this.#lastPong = Date.now();
        break;
      case 'event':
        this.opts.onEvent(this, m.name, m.payload);
        break;
    }
  }

  #outboundCall(m: Extract<FromWorker, { kind: 'outbound' }>): void {
    const ac = new AbortController();
    const inc = this.incarnation;
    this.#outbound.set(m.id, ac);
    const reply = (r: { ok: true; value: unknown } | { ok: false; error: SerializedError }): void => {
      // Cancelled by the worker, or its worker is gone (outbound ids restart with each incarnation).
      if (this.#outbound.get(m.id) !== ac) return;
      this.#outbound.delete(m.id);
      if (this.incarnation === inc) this.post({ kind: 'outbound-reply', id: m.id, inc, ...r });
    };
    // The executor runs at once, so the call starts before a cancel can arrive, and a synchronous throw is a rejection.
    new Promise<unknown>((resolve) => resolve(this.opts.onOutbound(this, m, ac.signal))).then(
      (value) => reply({ ok: true, value }),
      (err) => reply({ ok: false, error: serializeError(err) }),
    );
  }

  /** Aborts the calls the worker made: nobody is left to receive their answers. */
  #abortOutbound(reason: AlbedoError): void {
    const calls = [...this.#outbound.values()];
    this.#outbound.clear();
    for (const ac of calls) ac.abort(reason);
  }

  #startHeartbeat(): void {
    clearInterval(this.#heartbeat);
    const { intervalMs, timeoutMs } = this.opts.heartbeat;
    this.#heartbeat = setInterval(() => {
      if (this.state !== 'ready') return;
      if (Date.now() - this.#lastPong > timeoutMs) {
        this.#lastError = `unresponsive for ${timeoutMs} ms (event loop blocked)`;
        this.#lastCause = 'unresponsive';
        void this.#worker?.terminate();
        return;
      }
      this.post({ kind: 'ping', seq: ++this.#pingSeq, inc: this.incarnation });
    }, intervalMs);
    this.#heartbeat.unref();
  }

  #onExit(code: number): void {
    clearInterval(this.#heartbeat);
    clearTimeout(this.#startTimer);
    // What it sent before it went is handled first (its replies are answers, its `fatal` says why), in order.
    const rest = this.#inbox;
    this.#inbox = [];
    for (const m of rest) if (m.inc === this.incarnation) this.#onMessage(m);
    this.#worker = undefined;
    this.#queue = [];
    if (this.state === 'stopped') return;
    const reason = this.#lastError || `worker exited with code ${code}`;
    const { service, instance } = this.opts;
    const lost = new AlbedoError(
      'ALBEDO_SERVICE_LOST',
      `service ${service}#${instance} was lost (${reason}); the request's outcome is unknown`,
      {
        outcome: 'unknown',
        data: { service, instance, reason },
      },
    );
    for (const p of this.#inflight.values()) {
      if (p.sent) {
        this.#inflight.delete(p.id);
        p.reject(lost);
      }
    }
    // The calls this worker made to other services have nobody left to answer to: their handlers' signals abort.
    this.#abortOutbound(
      new AlbedoError('ALBEDO_SERVICE_LOST', `the ${service}#${instance} worker that made this call was lost (${reason})`, {
        outcome: 'unknown',
      }),
    );
    this.opts.onLifecycle(this, 'lost', reason, this.#lastCause);
    const now = Date.now();
    const { intensity, periodMs } = this.opts.restart;
    this.#restarts = this.#restarts.filter((t) => now - t < periodMs);
    if (this.#probing) return this.#fail(`failed again after its cool-down (last: ${reason})`, reason);
    if (this.#restarts.length >= intensity) {
      return this.#fail(`failed ${this.#restarts.length + 1} times within ${periodMs} ms (last: ${reason})`, reason);
    }
    this.#restarts.push(now);
    const delay = Math.min(this.opts.restart.maxBackoffMs, this.opts.restart.backoffMs * 2 ** (this.#restarts.length - 1));
    this.state = 'backoff';
    this.#backoffTimer = setTimeout(() => {
      if (this.state === 'backoff') this.#spawn();
    }, delay);
  }

  /** Past the intensity: calls fail fast, and one more start is tried after the cool-down. */
  #fail(why: string, reason: string): void {
    this.state = 'failed';
    this.#probing = false;
    const { service, instance } = this.opts;
    const { coolDownMs } = this.opts.restart;
    const failed = new AlbedoError('ALBEDO_SERVICE_FAILED', `service ${service}#${instance} ${why}; it is retried in ${coolDownMs} ms`, {
      outcome: 'not_run',
    });
    for (const p of this.#inflight.values()) p.reject(failed);
    this.#inflight.clear();
    this.opts.onLifecycle(this, 'failed', reason);
    this.#coolDownTimer = setTimeout(() => {
      if (this.state !== 'failed') return;
      this.#restarts = [];
      this.#probing = true;
      this.#spawn();
    }, coolDownMs);
    // A failed slot alone must not keep the embedder's process alive.
    this.#coolDownTimer.unref();
  }

  /** Forwards a subscribed event to a ready worker; one that is starting or down misses it (events are news, not state). */
  forward(topic: string, payload: unknown): void {
    if (this.state === 'ready') this.post({ kind: 'forwarded', inc: this.incarnation, topic, payload });
  }

  /** Queues an envelope for the worker; the turn's envelopes go as one message. */
  post(m: ToWorker): void {
    if (!this.#worker) return;
    this.#queue.push(m);
    if (!this.#flushing) {
      this.#flushing = true;
      setImmediate(this.#flush);
    }
  }

  #flushNow(): void {
    this.#flushing = false;
    const w = this.#worker;
    let batch = this.#queue;
    this.#queue = [];
    if (!w || batch.length === 0) return;
    // A call abandoned while it waited here is never sent (its caller already has its answer).
    batch = batch.filter((m) => m.kind !== 'call' || this.#inflight.has(m.id));
    if (batch.length === 0) return;
    try {
      w.postMessage(batch);
      this.#sent(batch);
    } catch {
      // One envelope that cannot be cloned (a function in a call's params) must not take the others down.
      for (const m of batch) {
        try {
          w.postMessage([m]);
          this.#sent([m]);
        } catch (err) {
          this.#unsendable(m, err);
        }
      }
    }
  }

  #sent(batch: ToWorker[]): void {
    this.wire.messagesOut++;
    this.wire.envelopesOut += batch.length;
    for (const m of batch) {
      if (m.kind === 'call') {
        const p = this.#inflight.get(m.id);
        if (p) p.sent = true;
      }
    }
  }

  /** An envelope that could not be cloned: its call fails as not run; an answer to the worker becomes an error answer. */
  #unsendable(m: ToWorker, err: unknown): void {
    const why = err instanceof Error ? err.message : String(err);
    if (m.kind === 'call') {
      const p = this.#inflight.get(m.id);
      this.#inflight.delete(m.id);
      p?.reject(
        new AlbedoError('ALBEDO_INVALID_ARGUMENT', `${this.opts.service} ${m.method}: its params could not cross threads: ${why}`, {
          outcome: 'not_run',
        }),
      );
    } else if (m.kind === 'outbound-reply' && m.ok) {
      const error = serializeError(new AlbedoError('ALBEDO_INTERNAL', `the reply could not cross threads: ${why}`, { outcome: 'unknown' }));
      this.post({ kind: 'outbound-reply', id: m.id, inc: m.inc, ok: false, error });
    }
    // A forwarded event that cannot cross is dropped: events are news.
  }

  /** Queues or sends a call. The caller owns the deadline timer. */
  dispatch(p: Pending): void {
    if (this.state === 'failed') {
      const { service, instance } = this.opts;
      p.reject(
        new AlbedoError('ALBEDO_SERVICE_FAILED', `service ${service}#${instance} has failed and waits for its cool-down`, {
          outcome: 'not_run',
        }),
      );
      return;
    }
    if (this.state === 'stopped') {
      p.reject(new AlbedoError('ALBEDO_CLOSED', 'the kernel is stopped', { outcome: 'not_run' }));
      return;
    }
    this.#inflight.set(p.id, p);
    if (this.state === 'ready') this.#send(p);
  }

  #send(p: Pending): void {
    this.post({ kind: 'call', id: p.id, inc: this.incarnation, method: p.method, params: p.params, deadline: p.deadline });
  }

  /** The caller gave up: forget the call and tell the worker to abort it. */
  abandon(id: number): void {
    const p = this.#inflight.get(id);
    if (!p) return;
    this.#inflight.delete(id);
    if (p.sent) this.post({ kind: 'cancel', id, inc: this.incarnation });
  }

  /** Fault injection (kernel/faults.ts): a worker booted without `faults` ignores it. */
  fault(fault: 'crash' | 'hang'): void {
    this.post({ kind: 'fault', fault, inc: this.incarnation });
  }

  /** Graceful stop: the service's stop hook gets `graceMs`, then the thread is terminated. Idempotent. */
  stop(graceMs: number): Promise<void> {
    this.#stopping ??= this.#stop(graceMs);
    return this.#stopping;
  }

  async #stop(graceMs: number): Promise<void> {
    const w = this.#worker;
    const wasReady = this.state === 'ready';
    this.state = 'stopped';
    clearInterval(this.#heartbeat);
    clearTimeout(this.#startTimer);
    clearTimeout(this.#backoffTimer);
    clearTimeout(this.#coolDownTimer);
    this.#probing = false;
    this.#abortOutbound(new AlbedoError('ALBEDO_CLOSED', `service ${this.opts.service} stopped`, { outcome: 'unknown' }));
    const closed = (outcome: 'unknown' | 'not_run'): AlbedoError =>
      new AlbedoError('ALBEDO_CLOSED', `service ${this.opts.service} stopped before answering`, { outcome });
    // A call still waiting in the queue was never delivered.
    for (const p of this.#inflight.values()) p.reject(closed(p.sent ? 'unknown' : 'not_run'));
    this.#inflight.clear();
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    // A worker still starting has no service to stop gracefully: terminate it outright.
    // What was queued goes first (a cancel, a reply to the worker's own call), then the stop.
    if (wasReady) {
      this.post({ kind: 'stop', inc: this.incarnation });
      this.#flushNow();
    } else void w.terminate();
    const timer = setTimeout(() => void w.terminate(), graceMs);
    await exited;
    clearTimeout(timer);
    // A worker terminated before it came online can leave its port referenced; let the loop go.
    w.unref();
  }
}
