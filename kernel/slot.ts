/**
 * One supervised worker thread: a pool slot of a service. It owns the
 * worker's lifecycle (start, ready handshake, liveness, restart with backoff
 * and an intensity limit) and the calls in flight on it. A reply or event
 * from an older incarnation is dropped.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { AlbedoError, deserializeError } from '../protocol/errors.ts';
import type { FromWorker, ToWorker, WorkerBoot } from '../protocol/services/envelope.ts';

const HOST = fileURLToPath(new URL('./worker-host.ts', import.meta.url));

export interface RestartPolicy {
  /** At most this many restarts… */
  intensity: number;
  /** …within this many milliseconds; past it the slot fails for good (escalates). */
  periodMs: number;
  /** First restart delay, doubling per restart inside the period, capped at maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
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
  onOutbound(slot: Slot, m: Extract<FromWorker, { kind: 'outbound' }>): void;
  onLifecycle(slot: Slot, what: 'lost' | 'restarted' | 'failed', reason: string): void;
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
  #lastPong = 0;
  #pingSeq = 0;
  #lastError = '';
  #stopping: Promise<void> | undefined;
  #everReady = false;

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

  #spawn(): void {
    this.incarnation++;
    this.state = 'starting';
    const boot: WorkerBoot = { service: this.opts.service, module: this.opts.module, instance: this.opts.instance, inc: this.incarnation, options: this.opts.options };
    const w = new Worker(HOST, { workerData: boot, stderr: false, stdout: false });
    this.#worker = w;
    const inc = this.incarnation;
    this.#lastError = '';
    w.on('message', (m: FromWorker) => {
      if (m.inc !== this.incarnation || w !== this.#worker) return; // stale incarnation: dropped
      this.#onMessage(m);
    });
    w.on('error', (err) => {
      if (w === this.#worker) this.#lastError = err?.message ?? String(err);
    });
    w.on('exit', (code) => {
      if (w !== this.#worker || inc !== this.incarnation) return;
      this.#onExit(code);
    });
    this.#startTimer = setTimeout(() => {
      if (this.state === 'starting' && w === this.#worker) {
        this.#lastError = `did not become ready within ${this.opts.startTimeoutMs} ms`;
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
        const restarted = this.#everReady;
        this.#everReady = true;
        this.state = 'ready';
        this.#lastPong = Date.now();
        this.#startHeartbeat();
        for (const p of this.#inflight.values()) if (!p.sent) this.#send(p);
        if (restarted) this.opts.onLifecycle(this, 'restarted', 'ready again');
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
      case 'outbound':
        this.opts.onOutbound(this, m);
        break;
    }
  }

  #startHeartbeat(): void {
    clearInterval(this.#heartbeat);
    const { intervalMs, timeoutMs } = this.opts.heartbeat;
    this.#heartbeat = setInterval(() => {
      if (this.state !== 'ready') return;
      if (Date.now() - this.#lastPong > timeoutMs) {
        this.#lastError = `unresponsive for ${timeoutMs} ms (event loop blocked)`;
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
    const lost = new AlbedoError('ALBEDO_SERVICE_LOST', `service ${this.opts.service}#${this.opts.instance} was lost (${reason}); the request's outcome is unknown`, { outcome: 'unknown', data: { service: this.opts.service, instance: this.opts.instance, reason } });
    for (const p of this.#inflight.values()) {
      if (p.sent) {
        this.#inflight.delete(p.id);
        p.reject(lost);
      }
    }
    this.opts.onLifecycle(this, 'lost', reason);
    const now = Date.now();
    this.#restarts = this.#restarts.filter((t) => now - t < this.opts.restart.periodMs);
    if (this.#restarts.length >= this.opts.restart.intensity) {
      this.state = 'failed';
      const failed = new AlbedoError('ALBEDO_SERVICE_FAILED', `service ${this.opts.service}#${this.opts.instance} failed ${this.#restarts.length + 1} times within ${this.opts.restart.periodMs} ms and was not restarted (last: ${reason})`, { outcome: 'not_run' });
      for (const p of this.#inflight.values()) p.reject(failed);
      this.#inflight.clear();
      this.opts.onLifecycle(this, 'failed', reason);
      return;
    }
    this.#restarts.push(now);
    const delay = Math.min(this.opts.restart.maxBackoffMs, this.opts.restart.backoffMs * 2 ** (this.#restarts.length - 1));
    this.state = 'backoff';
    this.#backoffTimer = setTimeout(() => {
      if (this.state === 'backoff') this.#spawn();
    }, delay);
  }

  post(m: ToWorker): void {
    this.#worker?.postMessage(m);
  }

  /** Queues or sends a call. The caller owns the deadline timer. */
  dispatch(p: Pending): void {
    if (this.state === 'failed') {
      p.reject(new AlbedoError('ALBEDO_SERVICE_FAILED', `service ${this.opts.service}#${this.opts.instance} has failed and is not restarted`, { outcome: 'not_run' }));
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
