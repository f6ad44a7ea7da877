/**
 * One call the kernel routed to a worker, from dispatch to its answer: the
 * slot's `Pending`, its deadline timer and its caller's abort signal. One
 * object per call and no closure: the timer gets the call as an argument,
 * the signal the call itself as its listener (`handleEvent`), the promise
 * comes from `Promise.withResolvers`. The kernel makes some hundred thousand
 * of these a second at 32 in flight, where closures per call showed as
 * garbage collection on the kernel's thread.
 */
import { AlbedoError } from '../protocol/errors.ts';
import type { Pending, Slot } from './slot.ts';

const ONCE = { once: true } as const;
const expire = (call: RoutedCall): void => call.expire();

export class RoutedCall implements Pending {
  readonly id: number;
  readonly method: string;
  readonly params: unknown;
  readonly deadline: number;
  sent = false;
  readonly promise: Promise<unknown>;
  #resolve: (value: unknown) => void;
  #reject: (err: unknown) => void;
  #slot: Slot;
  #service: string;
  /** What the caller asked for, for the message of a passed deadline. */
  #timeoutMs: number;
  #signal: AbortSignal | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    slot: Slot,
    id: number,
    service: string,
    method: string,
    params: unknown,
    deadline: number,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ) {
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    this.promise = promise;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#slot = slot;
    this.id = id;
    this.#service = service;
    this.method = method;
    this.params = params;
    this.deadline = deadline;
    this.#timeoutMs = timeoutMs;
    this.#signal = signal;
  }

  /** Arms the deadline (`ms` from now) and the caller's signal, and hands the call to its slot. */
  begin(ms: number): Promise<unknown> {
    if (this.#signal?.aborted) {
      this.handleEvent();
      return this.promise;
    }
    this.#signal?.addEventListener('abort', this, ONCE);
    this.#timer = setTimeout(expire, ms, this);
    this.#slot.dispatch(this);
    return this.promise;
  }

  resolve(value: unknown): void {
    this.#finish();
    this.#resolve(value);
  }

  reject(err: unknown): void {
    this.#finish();
    this.#reject(err);
  }

  /** The caller's signal aborted: the worker is told to abort it (if it was sent), and the caller gets why. */
  handleEvent(): void {
    this.#finish();
    this.#slot.abandon(this.id);
    const why = { outcome: 'unknown' as const, cause: this.#signal?.reason };
    this.#reject(new AlbedoError('ALBEDO_DEADLINE', `${this.#service} ${this.method} was aborted by the caller`, why));
  }

  /** The deadline passed: not run if it never left the kernel, unknown if the worker had it. */
  expire(): void {
    this.#finish();
    this.#slot.abandon(this.id);
    const outcome = this.sent ? 'unknown' : 'not_run';
    this.#reject(
      new AlbedoError('ALBEDO_DEADLINE', `${this.#service} ${this.method} did not answer within ${this.#timeoutMs} ms`, { outcome }),
    );
  }

  #finish(): void {
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this);
  }
}
