/**
 * Where a `catalogue/normalise` batch runs. A small batch runs on the
 * calling thread (the catalogue service's): the normaliser is fast enough
 * that a thread hop would cost more than it saves. A batch over the
 * threshold is cut into chunks that a piscina pool runs on threads of its
 * own (normalise-task.ts), so the service's event loop keeps answering
 * (`catalogue/current` while a 5,000-tool catalogue is normalised). The
 * pool is made at the first large batch, sized for a small machine, and its
 * threads end when idle; they are threads of the service's worker, so they
 * end with it however it ends (destroy() on a graceful stop; the worker's
 * teardown takes its nested workers on a crash or a terminate).
 */
import { Piscina } from 'piscina';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { AlbedoError } from '../../protocol/errors.ts';
import type { CatalogueStats } from '../../protocol/services/catalogue.ts';
import { normaliseAll, type NormaliseResult, type Profile } from './schema/normalise.ts';
import type { NormaliseTask, NormaliseTaskResult } from './normalise-task.ts';

/**
 * Batches of more schemas than this go to the pool. Measured (see
 * docs/architecture.md, "The service worker"): warm, in-thread normalising
 * blocks the service thread about 55 µs per schema (200: 11–16 ms), and the
 * pool answers a batch in 1.2–1.8× the in-thread time.
 */
export const POOL_THRESHOLD = 200;

/**
 * A few schemas can weigh as much as many (a 20,000-value enum, 100,000
 * properties): a batch with at least this many JSON nodes goes to the pool
 * however few schemas it holds. Counting stops there, so the check costs at
 * most about a millisecond.
 */
export const POOL_NODES = 20_000;

/** Whether `schemas` hold at least `limit` JSON nodes (objects, arrays and values), counted up to the limit. */
export function heavy(schemas: readonly unknown[], limit: number): boolean {
  let n = 0;
  const stack: unknown[] = [...schemas];
  while (stack.length) {
    const v = stack.pop();
    if (++n >= limit) return true;
    if (typeof v !== 'object' || v === null) continue;
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
  }
  return false;
}
/** Schemas per pool task: small enough that both threads share a batch, large enough that a message carries real work. */
export const POOL_CHUNK = 500;
/** Pool threads end after this long without a task. */
export const POOL_IDLE_MS = 10_000;

export interface PoolOptions {
  /** Batches of more schemas than this run on the pool (default POOL_THRESHOLD; 0: every non-empty batch). */
  threshold?: number;
  /** Batches of at least this many JSON nodes run on the pool however few schemas they hold (default POOL_NODES). */
  nodes?: number;
  /** Default: 2 on a machine with more than 2 cores, else 1. */
  maxThreads?: number;
  idleTimeoutMs?: number;
  chunk?: number;
}

/** What `catalogue/stats` shows of the pool (the protocol's type, less what is the service thread's own). */
export type PoolStats = Omit<CatalogueStats, 'tid' | 'loopDelay'>;

/** The pool's threads when the options do not say (bench/transfer.ts sizes its pools alike). */
export function defaultThreads(): number {
  // The service thread waits while the pool works, so on 2 cores one pool thread leaves the other core to the rest of the daemon.
  return availableParallelism() > 2 ? 2 : 1;
}

export class NormalisePool {
  #threshold: number;
  #nodes: number;
  #maxThreads: number;
  #idleMs: number;
  #chunk: number;
  #pool: Piscina<NormaliseTask, NormaliseTaskResult> | null = null;
  #tids = new Set<number>();
  #inThread = 0;
  #pooled = 0;
  #running = 0;
  #cancelled = 0;
  #closed = false;

  constructor(opts: PoolOptions = {}) {
    this.#threshold = opts.threshold ?? POOL_THRESHOLD;
    this.#nodes = opts.nodes ?? POOL_NODES;
    this.#maxThreads = Math.max(1, Math.min(2, opts.maxThreads ?? defaultThreads()));
    this.#idleMs = opts.idleTimeoutMs ?? POOL_IDLE_MS;
    this.#chunk = Math.max(1, opts.chunk ?? POOL_CHUNK);
  }

  /**
   * Normalises `schemas` for `profile` (a valid profile: the caller checked),
   * one answer per schema, in order. `signal` (the call's) drops queued
   * chunks and stops running ones when the caller gives up (rejecting with
   * its reason). Rejects with ALBEDO_CLOSED after destroy(), ALBEDO_INTERNAL
   * if a pool thread failed (the batch's other chunks are stopped then).
   */
  async normalise(schemas: readonly unknown[], profile: Profile, signal?: AbortSignal): Promise<NormaliseResult[]> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'the catalogue normaliser is stopped', { outcome: 'not_run' });
    if (schemas.length === 0 || (schemas.length <= this.#threshold && !heavy(schemas, this.#nodes))) {
      this.#inThread++;
      return normaliseAll(schemas, profile);
    }
    this.#pooled++;
    const pool = this.#get();
    const chunks: unknown[][] = [];
    for (let i = 0; i < schemas.length; i += this.#chunk) chunks.push(schemas.slice(i, i + this.#chunk));
    this.#running += chunks.length;
    // One signal for the batch's chunks: the caller giving up, or one chunk failing (the answer is lost anyway), stops the rest.
    const batch = new AbortController();
    const onAbort = (): void => batch.abort(signal!.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const parts = await Promise.all(chunks.map((c) => this.#run(pool, { schemas: c, profile }, batch)));
      return parts.flat();
    } catch (err) {
      batch.abort(err);
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async #run(pool: Piscina<NormaliseTask, NormaliseTaskResult>, task: NormaliseTask, batch: AbortController): Promise<NormaliseResult[]> {
    try {
      const { results, tid } = await pool.run(task, { signal: batch.signal });
      if (tid !== null) this.#tids.add(tid);
      return results;
    } catch (err) {
      if (batch.signal.aborted) {
        this.#cancelled++;
        throw batch.signal.reason;
      }
      if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'the catalogue normaliser stopped during the batch', { outcome: 'not_run' });
      const why = err instanceof Error ? err.message : String(err);
      // The normaliser is pure: nothing happened that a retry would repeat.
      throw new AlbedoError('ALBEDO_INTERNAL', `a normaliser thread failed: ${why}`, { outcome: 'not_run' });
    } finally {
      this.#running--;
    }
  }

  #get(): Piscina<NormaliseTask, NormaliseTaskResult> {
    if (this.#pool) return this.#pool;
    const pool = new Piscina<NormaliseTask, NormaliseTaskResult>({
      filename: new URL('./normalise-task.ts', import.meta.url).href,
      minThreads: 0,
      maxThreads: this.#maxThreads,
      idleTimeout: this.#idleMs,
    });
    // An error of a pool thread outside any task: the tasks it ran fail on their own (ALBEDO_INTERNAL), and piscina
    // replaces the thread. Unheard, the EventEmitter would throw it in the service thread and take the service down.
    pool.on('error', () => {});
    this.#pool = pool;
    return pool;
  }

  stats(): PoolStats {
    const p = this.#pool;
    for (const tid of this.#tids) if (!existsSync(`/proc/self/task/${tid}`)) this.#tids.delete(tid);
    return {
      threshold: this.#threshold,
      inThread: this.#inThread,
      pooled: this.#pooled,
      running: this.#running,
      cancelled: this.#cancelled,
      pool: p && { maxThreads: this.#maxThreads, threads: p.threads.length, tids: [...this.#tids] },
    };
  }

  /** Ends the pool's threads; batches still running reject with ALBEDO_CLOSED. Idempotent. */
  async destroy(): Promise<void> {
    this.#closed = true;
    const p = this.#pool;
    this.#pool = null;
    await p?.destroy();
  }
}
