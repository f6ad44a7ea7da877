/**
 * Fault injection for tests: crash or hang a service's worker, delay or drop
 * calls matching a service and method, and the test-only methods every
 * worker answers then (`kernel/echo`, `worker/stats`). Delay and drop are
 * kernel interceptors, so they act where every supervised call passes. Only
 * a kernel made with `faults: true` takes them: its workers are booted to act
 * on `fault` envelopes and to answer those methods; any other kernel's
 * workers ignore the one and answer the others ALBEDO_NOT_FOUND.
 */
import { AlbedoError } from '../protocol/errors.ts';
import type { ServiceName } from '../protocol/services/maps.ts';
import type { FaultMethods, WorkerStats } from '../protocol/services/envelope.ts';
import type { CallOptions, Interceptor, Kernel } from './kernel.ts';

export interface CallMatch {
  service: ServiceName;
  method?: string;
}

export class Faults {
  #kernel: Kernel;
  /** Throws ALBEDO_INVALID_ARGUMENT for a kernel made without `faults: true`: its workers would ignore the faults. */
  constructor(kernel: Kernel) {
    if (!kernel.faults) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'fault injection needs a kernel made with { faults: true }', { outcome: 'not_run' });
    }
    this.#kernel = kernel;
  }

  /** Throws an uncaught error inside the worker that holds `key` (or the first slot). */
  crash(service: ServiceName, key?: string): void {
    this.#slot(service, key).fault('crash');
  }

  /** Blocks that worker's event loop for good; the liveness check must end it. */
  hang(service: ServiceName, key?: string): void {
    this.#slot(service, key).fault('hang');
  }

  /** A fault aimed at no worker is a mistake in the test, not a no-op it would wait on: ALBEDO_NOT_FOUND. */
  #slot(service: ServiceName, key: string | undefined): NonNullable<ReturnType<Kernel['slotOf']>> {
    const slot = this.#kernel.slotOf(service, key);
    if (!slot) {
      const which = key === undefined ? `service ${service} has no worker` : `no worker of ${service} holds ${key}`;
      throw new AlbedoError('ALBEDO_NOT_FOUND', `${which} to inject a fault into`, { outcome: 'not_run' });
    }
    return slot;
  }

  /** Delays matching calls by `ms` before they are routed. Returns the undo. */
  delay(match: CallMatch, ms: number): () => void {
    const i: Interceptor = (next) => (c) =>
      matches(match, c.service, c.method) ? new Promise((r) => setTimeout(r, ms)).then(() => next(c)) : next(c);
    return this.#kernel.use(i);
  }

  /** Swallows the next `count` matching calls: they are never delivered, so only their deadline ends them. */
  drop(match: CallMatch, count = 1): () => void {
    let left = count;
    const i: Interceptor = (next) => (c) => {
      if (left > 0 && matches(match, c.service, c.method)) {
        left--;
        return new Promise((_, reject) => {
          const timedOut = (): void =>
            reject(
              new AlbedoError('ALBEDO_DEADLINE', `${c.service} ${c.method} was dropped (fault injection) and timed out`, {
                outcome: 'unknown',
              }),
            );
          const t = setTimeout(timedOut, c.opts.timeoutMs ?? 30_000);
          c.opts.signal?.addEventListener('abort', () => clearTimeout(t), { once: true });
        });
      }
      return next(c);
    };
    return this.#kernel.use(i);
  }

  /** `kernel/echo`: answers `params` at once from a worker of `service` (the one holding `opts.key`): a hop, or a liveness probe. */
  echo<T>(service: ServiceName, params: T, opts?: CallOptions): Promise<T> {
    return this.#kernel.callAny(service, 'kernel/echo' satisfies keyof FaultMethods, params, opts) as Promise<T>;
  }

  /**
   * `worker/stats`: the heap of a worker of `service` (the one holding
   * `opts.key`), with what the service's `stats` hook adds (the transport:
   * `connections`). `gc`: a full collection first.
   */
  stats(service: ServiceName, params: FaultMethods['worker/stats']['params'] = {}, opts?: CallOptions): Promise<WorkerStats> {
    return this.#kernel.callAny(service, 'worker/stats' satisfies keyof FaultMethods, params, opts) as Promise<WorkerStats>;
  }
}

function matches(m: CallMatch, service: string, method: string): boolean {
  return m.service === service && (m.method === undefined || m.method === method);
}
