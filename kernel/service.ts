/**
 * What a service module exports, and what its handlers get. A service file
 * `export default defineService({...})`; the kernel starts it in a worker
 * thread by path (it never imports it) and delivers calls in batches (the
 * envelopes of one turn, in order), each handler started as its envelope is
 * read. Handlers may be async: a service that must not interleave work for
 * one actor serialises it itself (the transport's connection actors do).
 */

export interface OutboundOptions {
  timeoutMs?: number;
  /** Cancels the call: pass the handler's own `ctx.signal` so a cancelled request cancels what it waits on. */
  signal?: AbortSignal;
  /** Pins the call to the slot that holds this key (an actor's id), as the kernel's `call` does. */
  key?: string;
  /** With a new key: give it a worker of its own. */
  isolate?: boolean;
}

export interface ServiceContext {
  /** Which pool slot this worker is, and its incarnation. */
  readonly instance: number;
  readonly incarnation: number;
  /** Options the kernel was given for this service. */
  readonly options: unknown;
  /** Publishes an event (past-tense name) to the kernel's subscribers. */
  emit(name: string, payload: unknown): void;
  /**
   * Calls another service through the kernel (default deadline 30 s). When
   * `signal` aborts, the promise rejects at once with ALBEDO_DEADLINE
   * (`unknown`) and the kernel aborts the call it made (a local handler's
   * `ctx.signal` aborts). A lost worker's outbound calls are aborted too.
   */
  call(service: string, method: string, params: unknown, opts?: OutboundOptions): Promise<unknown>;
  /** Forgets a key's placement in `service` (its actor was closed), as the kernel's `release`. */
  release(service: string, key: string): void;
}

export interface CallContext extends ServiceContext {
  /** Aborted when the caller's deadline passes or the call is cancelled. */
  readonly signal: AbortSignal;
  /** The caller's deadline, epoch milliseconds. */
  readonly deadline: number;
}

export type Handler = (params: any, ctx: CallContext) => unknown;

/** Receives a forwarded event (the service's spec subscribed to its topic). A throw is a defect of the service. */
export type EventHandler = (payload: any, ctx: ServiceContext) => void;

export interface ServiceDefinition {
  handlers: Record<string, Handler>;
  /**
   * Events of other services (and the kernel's own) this service follows, by
   * topic `service:name` (`transport:connection/dropped`,
   * `kernel:service/lost`). The kernel forwards the topics its spec lists in
   * `subscribe`; they arrive in the order they were published, and none
   * that was published while this worker was down is replayed.
   */
  events?: Record<string, EventHandler>;
  /** Runs once before the worker reports ready. */
  start?(ctx: ServiceContext): void | Promise<void>;
  /** Runs on a graceful stop; bounded by the kernel's shutdown time. */
  stop?(): void | Promise<void>;
}

export function defineService(def: ServiceDefinition): ServiceDefinition {
  return def;
}
