/**
 * Fault injection for tests: crash or hang a service's worker, delay or drop
 * calls matching a service and method. Delay and drop are kernel
 * interceptors, so they act where every supervised call passes.
 */
import { AlbedoError } from '../protocol/errors.ts';
import type { ServiceName } from '../protocol/services/maps.ts';
import type { Interceptor, Kernel } from './kernel.ts';

export interface CallMatch {
  service: ServiceName;
  method?: string;
}

export class Faults {
  #kernel: Kernel;
  constructor(kernel: Kernel) {
    this.#kernel = kernel;
  }

  /** Throws an uncaught error inside the worker that holds `key` (or the first slot). */
  crash(service: ServiceName, key?: string): void {
    this.#kernel.slotOf(service, key)?.fault('crash');
  }

  /** Blocks that worker's event loop for good; the liveness check must end it. */
  hang(service: ServiceName, key?: string): void {
    this.#kernel.slotOf(service, key)?.fault('hang');
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
}

function matches(m: CallMatch, service: string, method: string): boolean {
  return m.service === service && (m.method === undefined || m.method === method);
}
