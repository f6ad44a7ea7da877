/**
 * One supervised worker thread: a pool slot of a service. It owns the
 * worker's lifecycle (start, ready handshake, liveness, restart with backoff
 * and an intensity limit, a retry after a cool-down once the limit is
 * passed), the calls in flight on it, and the calls its worker made to other
 * services. A reply or event from an older incarnation is dropped.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { AlbedoError, deserializeError, serializeError, type SerializedError } from '../protocol/errors.ts';
import type { FromWorker, ToWorker, WorkerBoot, LostCause } from '../protocol/services/envelope.ts';

const HOST = fileURLToPath(new URL('./worker-host.ts', import.meta.url));

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
  onEvent(slot: Slot, name: string, payload: unknown): void;
  /** Routes a worker's call to another service; `signal` aborts when the worker cancels it or is lost. */
  onOutbound(slot: Slot, m: Extract<FromWorker, { kind: 'outbound' }>, signal: AbortSignal): Promise<unknown>;
  /** The worker released a key of another service. */
  onRelease(slot: Slot, service: string, key: string): void;
  onLifecycle(slot: Slot, what: 'lost' | 'restarted' | 'failed', reason: string, cause?: LostCause): void;
}

export interface Pending {
  id: number;
  method: string;
  params: unknown;
  deadline: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
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
    const { service, module, instance, options } = this.opts;
    const boot: WorkerBoot = { service, module, instance, inc: this.incarnation, options };
    const w = new Worker(HOST, { workerData: boot, stderr: false, stdout: false });
    this.#worker = w;
    const inc = this.incarnation;
    this.#lastError = '';
    this.#lastCause = 'exit';
    w.on('message', (m: FromWorker) => {
      if (m.inc !== this.incarnation || w !== this.#worker) return; // stale incarnation: dropped
      this.#onMessage(m);
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
    this.#worker = undefined;
    if (this.state === 'stopped') return;
    const reason = this.#lastError || `worker exited with code ${code}`;
    const { service, instance } = this.opts;
    const lost = new AlbedoError('ALBEDO_SERVICE_LOST', `service ${service}#${instance} was lost (${reason}); the request's outcome is unknown`, {
      outcome: 'unknown',
      data: { service, instance, reason },
    });
    for (const p of this.#inflight.values()) {
      if (p.sent) {
        this.#inflight.delete(p.id);
        p.reject(lost);
      }
    }
    // The calls this worker made to other services have nobody left to answer to: their handlers' signals abort.
    this.#abortOutbound(new AlbedoError('ALBEDO_SERVICE_LOST', `the ${service}#${instance} worker that made this call was lost (${reason})`, {
      outcome: 'unknown',
    }));
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
    const failed = new AlbedoError('ALBEDO_SERVICE_FAILED', `service ${service}#${instance} ${why}; it is retried in ${coolDownMs} ms`, { outcome: 'not_run' });
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

  post(m: ToWorker): void {
    this.#worker?.postMessage(m);
  }

  /** Queues or sends a call. The caller owns the deadline timer. */
  dispatch(p: Pending): void {
    if (this.state === 'failed') {
      const { service, instance } = this.opts;
      p.reject(new AlbedoError('ALBEDO_SERVICE_FAILED', `service ${service}#${instance} has failed and waits for its cool-down`, { outcome: 'not_run' }));
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
    p.sent = true;
    this.post({ kind: 'call', id: p.id, inc: this.incarnation, method: p.method, params: p.params, deadline: p.deadline });
  }

  /** The caller gave up: forget the call and tell the worker to abort it. */
  abandon(id: number): void {
    const p = this.#inflight.get(id);
    if (!p) return;
    this.#inflight.delete(id);
    if (p.sent) this.post({ kind: 'cancel', id, inc: this.incarnation });
  }

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
    const closed = new AlbedoError('ALBEDO_CLOSED', `service ${this.opts.service} stopped before answering`, { outcome: 'unknown' });
    for (const p of this.#inflight.values()) p.reject(closed);
    this.#inflight.clear();
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    // A worker still starting has no service to stop gracefully: terminate it outright.
    if (wasReady) w.postMessage({ kind: 'stop', inc: this.incarnation } satisfies ToWorker);
    else void w.terminate();
    const timer = setTimeout(() => void w.terminate(), graceMs);
    await exited;
    clearTimeout(timer);
    // A worker terminated before it came online can leave its port referenced; let the loop go.
    w.unref();
  }
}
