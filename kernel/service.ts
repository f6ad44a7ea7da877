/**
 * What a service module exports, and what its handlers get. A service file
 * `export default defineService('catalogue', {...})`: its handlers, the
 * events it follows, its context's `call` and `emit` are checked by the
 * compiler against that service's message map (protocol/services/maps.ts),
 * the same map the kernel's `call` and `on` are typed from; a replacement
 * module for a service is checked the same way. The kernel starts it in a
 * worker thread by path (it never imports it) and delivers calls in batches
 * (the envelopes of one turn, in order), each handler started as its
 * envelope is read. Handlers may be async: a service that must not
 * interleave work for one actor serialises it itself (the transport's
 * connection actors do).
 */
import type { EventOf, MethodOf, ParamsOf, PayloadOf, ResultOf, ServiceName, Topic, TopicPayload } from '../protocol/services/maps.ts';

export interface OutboundOptions {
  timeoutMs?: number;
  /** Cancels the call: pass the handler's own `ctx.signal` so a cancelled request cancels what it waits on. */
  signal?: AbortSignal;
  /** Pins the call to the slot that holds this key (an actor's id), as the kernel's `call` does. */
  key?: string;
  /** With a new key: give it a worker of its own. */
  isolate?: boolean;
}

interface ContextBase {
  /** Which pool slot this worker is, and its incarnation. */
  readonly instance: number;
  readonly incarnation: number;
  /** Options the kernel was given for this service. */
  readonly options: unknown;
}

/** A call to another service through the kernel, typed by that service's map: the result is what its handler returns. */
export type CallOut = <T extends ServiceName, M extends MethodOf<T>>(
  service: T,
  method: M,
  params: ParamsOf<T, M>,
  opts?: OutboundOptions,
) => Promise<ResultOf<T, M>>;

/** What the service `S` is given: its own events to publish, and the other services to call. */
export interface ServiceContext<S extends ServiceName> extends ContextBase {
  /** Publishes one of this service's events (past-tense name) to the kernel's subscribers. */
  emit<E extends EventOf<S>>(name: E, payload: PayloadOf<S, E>): void;
  /**
   * Calls another service through the kernel (default deadline 30 s). When
   * `signal` aborts, the promise rejects at once with ALBEDO_DEADLINE
   * (`unknown`) and the kernel aborts the call it made (a local handler's
   * `ctx.signal` aborts). A lost worker's outbound calls are aborted too.
   */
  call: CallOut;
  /** Forgets a key's placement in `service` (its actor was closed), as the kernel's `release`. */
  release(service: ServiceName, key: string): void;
}

interface CallBase {
  /** Aborted when the caller's deadline passes or the call is cancelled. */
  readonly signal: AbortSignal;
  /** The caller's deadline, epoch milliseconds. */
  readonly deadline: number;
}

export interface CallContext<S extends ServiceName> extends ServiceContext<S>, CallBase {}

/** A handler of method `M`: takes its params, answers its result (or a promise of it). */
export type Handler<S extends ServiceName, M extends MethodOf<S>> = (
  params: ParamsOf<S, M>,
  ctx: CallContext<S>,
) => ResultOf<S, M> | Promise<ResultOf<S, M>>;

/** One handler for every method of the map: none missing, none extra. */
export type Handlers<S extends ServiceName> = { [M in MethodOf<S>]: Handler<S, M> };

/**
 * Receives a forwarded event (the service's spec subscribed to its topic),
 * typed by the topic. A throw is a defect of the service.
 */
export type EventHandlers<S extends ServiceName> = { [T in Topic]?: (payload: TopicPayload<T>, ctx: ServiceContext<S>) => void };

export interface ServiceDefinition<S extends ServiceName> {
  handlers: Handlers<S>;
  /**
   * Events of other services (and the kernel's own) this service follows, by
   * topic `service:name` (`transport:connection/dropped`,
   * `kernel:service/lost`). The kernel forwards the topics its spec lists in
   * `subscribe`; they arrive in the order they were published, and none
   * that was published while this worker was down is replayed.
   */
  events?: EventHandlers<S>;
  /** Runs once before the worker reports ready. */
  start?(ctx: ServiceContext<S>): void | Promise<void>;
  /** Runs on a graceful stop; bounded by the kernel's shutdown time. */
  stop?(): void | Promise<void>;
  /** Figures `worker/stats` adds for this service when fault injection is on (the transport's `connections`). */
  stats?(): Record<string, number>;
}

/** What a service module exports: its definition, and which service's contract it implements. */
export interface ServiceModule<S extends ServiceName> extends ServiceDefinition<S> {
  readonly service: S;
}

/**
 * Defines the service `service` (a name of protocol/services/maps.ts): the
 * compiler checks every handler's params and result against its map, that
 * none is missing or extra, `emit` against its events and `events` against
 * the topics. The worker host refuses a module started under another name.
 */
export function defineService<S extends ServiceName>(service: S, def: NoInfer<ServiceDefinition<S>>): ServiceModule<S> {
  return { ...def, service };
}

/** The context of a service outside the maps (a test's fixture): nothing is checked. */
export interface UncheckedContext extends ContextBase {
  emit(name: string, payload: unknown): void;
  call(service: string, method: string, params: unknown, opts?: OutboundOptions): Promise<unknown>;
  release(service: string, key: string): void;
}

export interface UncheckedCallContext extends UncheckedContext, CallBase {}

/** A definition with no map behind it: what the worker host runs once the module's types are gone (it loads it by path). */
export interface UncheckedDefinition {
  /** Set by defineService: the service whose contract the module implements. */
  readonly service?: string;
  /** Set by defineUncheckedService: a module outside the maps, which the worker host starts under any name. */
  readonly unchecked?: true;
  handlers: Record<string, (params: any, ctx: UncheckedCallContext) => unknown>;
  events?: Record<string, (payload: any, ctx: UncheckedContext) => void>;
  start?(ctx: UncheckedContext): void | Promise<void>;
  stop?(): void | Promise<void>;
  stats?(): Record<string, number>;
}

/**
 * For a service that is in no map (the kernel's test fixture, started under
 * any name): handlers, `call` and `emit` are not checked. A service of
 * protocol/services/maps.ts uses defineService.
 */
export function defineUncheckedService(def: UncheckedDefinition): UncheckedDefinition {
  // Marked so the worker host knows it was meant to run under any name; a plain object naming no service is refused.
  return { ...def, unchecked: true };
}

/**
 * The context a worker host gives every service module: it implements the
 * typed context of any service (ServiceContext<S>) and, for an unchecked
 * one, the same calls by plain strings.
 */
export interface WorkerContext extends ContextBase {
  emit(name: string, payload: unknown): void;
  call: CallOut & UncheckedContext['call'];
  release(service: string, key: string): void;
}
