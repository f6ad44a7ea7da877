/**
 * The kernel: starts services in worker threads by file path, routes typed
 * calls to them with a deadline each, fans their events out, and supervises
 * them (kernel/slot.ts). It owns no MCP logic and imports no service.
 *
 * Calls pass through a chain of interceptors (undici-style: each takes the
 * next dispatch and returns one), which is where fault injection sits
 * (kernel/faults.ts, on only for a kernel made with `faults: true`).
 *
 * Services stop in the reverse of their dependencies (ServiceSpec.dependsOn),
 * as an OTP supervisor stops its children: a service's stop hook may still
 * call what it depends on.
 */
import { AlbedoError } from '../protocol/errors.ts';
import type { MethodOf, ParamsOf, ResultOf, ServiceEvents, ServiceName, Topic } from '../protocol/services/maps.ts';
import type { LostCause } from '../protocol/services/envelope.ts';
import { Slot, type RestartPolicy } from './slot.ts';
import { RoutedCall } from './routed-call.ts';

export interface ServiceSpec {
  name: string;
  /** Absolute path of the service module (a file exporting defineService(...)). */
  module: string;
  /** Shared pool size, a whole number of at least 1 (`start` refuses anything else); keys are spread over these slots. Default 1. */
  instances?: number;
  options?: unknown;
  restart?: Partial<RestartPolicy>;
  heartbeat?: { intervalMs: number; timeoutMs: number };
  startTimeoutMs?: number;
  /** Event topics (`service:name`, `kernel:service/lost`) forwarded to this service's workers (ServiceDefinition.events). */
  subscribe?: Topic[];
  /**
   * The services this one calls. `stop` stops it before any of them, so its
   * stop hook can still reach them; names not started (or on the kernel's
   * own thread, as `client`) set no order.
   */
  dependsOn?: string[];
}

export interface KernelOptions {
  /**
   * Fault injection (kernel/faults.ts): workers act on `fault` envelopes and
   * answer the test-only methods (`kernel/echo`, `worker/stats`). Off by
   * default: a worker then ignores the one and answers the others
   * ALBEDO_NOT_FOUND.
   */
  faults?: boolean;
}

export interface CallOptions {
  /** Deadline relative to now. Default 30 s. */
  timeoutMs?: number;
  /** Pins the call to the slot that holds this key (an actor's id). */
  key?: string;
  /** With a new key: give it a worker of its own. */
  isolate?: boolean;
  signal?: AbortSignal;
  /** Absolute deadline (epoch ms), fixed when the call is made so interceptors cannot stretch it. */
  deadline?: number;
}

export interface OutgoingCall {
  service: string;
  method: string;
  params: unknown;
  opts: CallOptions;
  /** The service whose worker made the call; absent for the embedder's own. During `stop` only these are still routed. */
  from?: string;
}
export type Dispatch = (call: OutgoingCall) => Promise<unknown>;
export type Interceptor = (next: Dispatch) => Dispatch;

export interface LifecycleEvent {
  service: string;
  instance: number;
  incarnation: number;
  keys: string[];
  reason: string;
  /** For `service/lost` (and `service/failed`): why, as a stable word. */
  cause?: LostCause;
}

type Listener = (payload: any) => void;

/** A slot as `slots()` shows it; `healthy` is whether placement may choose it. */
export interface SlotInfo {
  instance: number;
  state: string;
  healthy: boolean;
  incarnation: number;
  keys: string[];
  inflight: number;
  threadId: number | undefined;
}

const isHealthy = (s: Slot): boolean => s.healthy;

function fewestKeys(slots: Slot[]): Slot {
  return slots.reduce((a, b) => (b.keys.size < a.keys.size ? b : a));
}

/** A service that lives on the kernel's own thread (the embedder's callbacks): handlers run in place. */
export type LocalHandler = (params: any, ctx: { signal: AbortSignal; deadline: number }) => unknown;
/** A local service's handlers, checked against its map as a worker's are (kernel/service.ts): none missing, none extra. */
export type LocalHandlers<S extends ServiceName> = {
  [M in MethodOf<S>]: (params: ParamsOf<S, M>, ctx: { signal: AbortSignal; deadline: number }) => ResultOf<S, M> | Promise<ResultOf<S, M>>;
};

const DEFAULT_RESTART: RestartPolicy = { intensity: 5, periodMs: 30_000, backoffMs: 50, maxBackoffMs: 5_000, coolDownMs: 5 * 60_000 };

interface Service {
  spec: ServiceSpec;
  /** The shared slots started so far, by instance; up to `size` of them, started as placement first needs each one. */
  shared: Slot[];
  size: number;
  /** Shared slots (by instance) first, then dedicated ones. */
  slots: Slot[];
  byKey: Map<string, Slot>;
  rr: number;
  /** Its stop has begun: calls to it are refused. */
  stopped: boolean;
}

export class Kernel {
  #services = new Map<string, Service>();
  #local = new Map<string, Record<string, LocalHandler>>();
  #listeners = new Map<string, Set<Listener>>();
  #interceptors: Interceptor[] = [];
  #dispatch: Dispatch;
  #nextId = 1;
  #stopped = false;
  #stopping: Promise<void> | undefined;
  /** Whether this kernel's workers take faults (KernelOptions.faults). */
  readonly faults: boolean;

  constructor(opts: KernelOptions = {}) {
    this.faults = opts.faults === true;
    this.#dispatch = this.#compose();
  }

  /**
   * Starts a service's shared pool. Its first worker starts now, in the
   * background (calls queue until it is ready); each further one when
   * placement first needs it (see #slotFor), so a process that uses one
   * connection pays for one worker's start-up and memory, not the pool's.
   * Throws ALBEDO_INVALID_ARGUMENT for a name taken (by a worker service or
   * a local one) or a bad `instances`; a first worker that cannot be made
   * (options a thread cannot take) throws too, and leaves nothing registered.
   */
  start(spec: ServiceSpec): void {
    if (this.#stopped) throw new AlbedoError('ALBEDO_CLOSED', 'the kernel is stopped');
    if (this.#services.has(spec.name) || this.#local.has(spec.name)) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `service ${spec.name} is already started`);
    }
    const size = spec.instances ?? 1;
    // A pool of none (or of a fraction) has no slot to place a call on: placement would fail on every call.
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `service ${spec.name}: instances must be a whole number of at least 1`, {
        outcome: 'not_run',
      });
    }
    const svc: Service = { spec, shared: [], size, slots: [], byKey: new Map(), rr: 0, stopped: false };
    this.#services.set(spec.name, svc);
    try {
      this.#newShared(svc);
    } catch (err) {
      // The first worker could not be made (options a thread cannot take): nothing stays registered under the name.
      this.#services.delete(spec.name);
      throw err;
    }
  }

  /** The next shared slot: instance numbers 0…size−1 are the pool's, whenever each starts; dedicated slots come after. */
  #newShared(svc: Service): Slot {
    const slot = this.#newSlot(svc, false, svc.shared.length);
    svc.slots.splice(svc.shared.length, 0, slot);
    svc.shared.push(slot);
    return slot;
  }

  #newSlot(svc: Service, dedicated: boolean, instance = svc.size + svc.slots.length - svc.shared.length): Slot {
    const spec = svc.spec;
    const slot = new Slot({
      service: spec.name,
      module: spec.module,
      instance,
      options: spec.options,
      restart: { ...DEFAULT_RESTART, ...spec.restart },
      heartbeat: spec.heartbeat ?? { intervalMs: 1_000, timeoutMs: 10_000 },
      startTimeoutMs: spec.startTimeoutMs ?? 15_000,
      dedicated,
      faults: this.faults,
      onEvent: (s, name, payload) => this.#emit(`${spec.name}:${name}`, payload),
      // The slot posts the reply to the incarnation that asked, and aborts `signal` if that worker cancels or is lost.
      onOutbound: (_s, m, signal) => {
        const opts: CallOptions = { timeoutMs: Math.max(0, m.deadline - Date.now()), signal };
        if (typeof m.key === 'string') opts.key = m.key;
        if (m.isolate === true) opts.isolate = true;
        return this.#send(m.service, m.method, m.params, opts, spec.name);
      },
      onRelease: (_s, service, key) => void this.release(service as ServiceName, key).catch(() => {}),
      onLifecycle: (s, what, reason, cause) => {
        const ev: LifecycleEvent = { service: spec.name, instance: s.opts.instance, incarnation: s.incarnation, keys: [...s.keys], reason };
        if (cause) ev.cause = cause;
        this.#emit(`kernel:service/${what}`, ev);
      },
    });
    if (dedicated) svc.slots.push(slot);
    return slot;
  }

  /** Adds an interceptor around every call (outermost last). */
  use(interceptor: Interceptor): () => void {
    this.#interceptors.push(interceptor);
    this.#dispatch = this.#compose();
    return () => {
      this.#interceptors = this.#interceptors.filter((i) => i !== interceptor);
      this.#dispatch = this.#compose();
    };
  }

  #compose(): Dispatch {
    return this.#interceptors.reduce<Dispatch>(
      (next, i) => i(next),
      (c) => this.#route(c),
    );
  }

  /** Calls `method` of `service` with a deadline. Rejects with an AlbedoError. */
  call<S extends ServiceName, M extends MethodOf<S>>(
    service: S,
    method: M,
    params: ParamsOf<S, M>,
    opts?: CallOptions,
  ): Promise<ResultOf<S, M>>;
  // The answer is what the service's handler returned, which its defineService checked against the same map.
  call(service: string, method: string, params: unknown, opts: CallOptions = {}): Promise<unknown> {
    return this.#send(service, method, params, opts);
  }

  /** A call as it comes off the wire (a worker's outbound envelope): names and params are checked where they were typed. */
  #send(service: string, method: string, params: unknown, opts: CallOptions, from?: string): Promise<unknown> {
    const withDeadline = opts.deadline === undefined ? { ...opts, deadline: Date.now() + (opts.timeoutMs ?? 30_000) } : opts;
    const c: OutgoingCall = { service, method, params, opts: withDeadline };
    if (from !== undefined) c.from = from;
    return this.#dispatch(c);
  }

  /**
   * `call` unchecked by the maps, for a method that is in none: the fault
   * API's test-only methods (kernel/faults.ts), a test's own service.
   */
  callAny(service: string, method: string, params: unknown, opts: CallOptions = {}): Promise<unknown> {
    return this.#send(service, method, params, opts);
  }

  /**
   * Placement. A shared slot past its restart intensity (`failed`, or a
   * cool-down retry not yet ready) takes no new keys while another is
   * healthy, and a key pinned to it moves to a healthy one on its next call
   * (its owner opens the actor there again: it saw `service/lost`). A
   * dedicated slot keeps its key and waits for its cool-down. With no
   * healthy slot the call goes to a failed one, which refuses it at once.
   */
  #slotFor(svc: Service, opts: CallOptions): Slot {
    const pinned = opts.key === undefined ? undefined : svc.byKey.get(opts.key);
    // The common case first, with nothing allocated: a key on a slot that may keep it.
    if (pinned && (pinned.healthy || pinned.opts.dedicated)) return pinned;
    const healthy = svc.shared.every(isHealthy) ? svc.shared : svc.shared.filter(isHealthy);
    // A shared slot not started yet counts as a healthy one holding no keys: placement is as if the whole pool ran.
    const unstarted = svc.size - svc.shared.length;
    if (opts.key !== undefined) {
      if (pinned && healthy.length === 0 && unstarted === 0) return pinned;
      if (!pinned && opts.isolate) return this.#pin(svc, opts.key, this.#newSlot(svc, true));
      pinned?.keys.delete(opts.key);
      const fewest = healthy.length ? fewestKeys(healthy) : undefined;
      if (unstarted > 0 && (!fewest || fewest.keys.size > 0)) return this.#pin(svc, opts.key, this.#newShared(svc));
      // With no healthy slot a new key still gets one: a failed slot refuses the call at once, a retry queues it.
      return this.#pin(svc, opts.key, fewest ?? fewestKeys(svc.shared));
    }
    // Round robin over the healthy slots and the ones not started yet; a turn that falls on the latter starts one.
    const n = healthy.length + unstarted;
    const turn = n ? svc.rr % n : svc.rr % svc.shared.length;
    svc.rr++;
    if (turn >= healthy.length && unstarted > 0) return this.#newShared(svc);
    return n ? healthy[turn] : svc.shared[turn];
  }

  #pin(svc: Service, key: string, slot: Slot): Slot {
    slot.keys.add(key);
    svc.byKey.set(key, slot);
    return slot;
  }

  /**
   * Registers a service that runs on this thread, so workers can call back
   * into the embedder (the `client` service answers servers' input requests
   * with the embedder's handlers). Returns a function that removes it.
   */
  provide<S extends ServiceName>(name: S, handlers: LocalHandlers<S>): () => void;
  provide(name: string, handlers: Record<string, LocalHandler>): () => void {
    if (this.#services.has(name) || this.#local.has(name)) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `service ${name} is already started`);
    }
    this.#local.set(name, handlers);
    return () => {
      if (this.#local.get(name) === handlers) this.#local.delete(name);
    };
  }

  #localCalls = new Set<AbortController>();

  #routeLocal(c: OutgoingCall, handlers: Record<string, LocalHandler>): Promise<unknown> {
    // Method names come from workers (and, through them, servers): never look them up on Object.prototype.
    const handler = Object.hasOwn(handlers, c.method) ? handlers[c.method] : undefined;
    if (typeof handler !== 'function') {
      return Promise.reject(new AlbedoError('ALBEDO_NOT_FOUND', `service ${c.service} has no method ${c.method}`, { outcome: 'not_run' }));
    }
    const deadline = c.opts.deadline ?? Date.now() + (c.opts.timeoutMs ?? 30_000);
    const caller = c.opts.signal;
    if (caller?.aborted) {
      const why = { outcome: 'not_run' as const, cause: caller.reason };
      return Promise.reject(new AlbedoError('ALBEDO_DEADLINE', `${c.service} ${c.method} was aborted by the caller`, why));
    }
    const ac = new AbortController();
    this.#localCalls.add(ac);
    const timer = setTimeout(
      () => ac.abort(new AlbedoError('ALBEDO_DEADLINE', `${c.service} ${c.method} passed its deadline`, { outcome: 'unknown' })),
      Math.max(0, deadline - Date.now()),
    );
    // The caller gave up (a worker's outbound call cancelled, or that worker lost): the handler's signal aborts with why.
    const onCallerAbort = (): void => {
      const why = caller!.reason;
      const aborted = new AlbedoError('ALBEDO_DEADLINE', `${c.service} ${c.method} was aborted by the caller`, {
        outcome: 'unknown',
        cause: why,
      });
      ac.abort(AlbedoError.is(why) ? why : aborted);
    };
    caller?.addEventListener('abort', onCallerAbort, { once: true });
    const run = (async () => handler(c.params, { signal: ac.signal, deadline }))();
    const expired = new Promise<never>((_, reject) => ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }));
    return Promise.race([run, expired]).finally(() => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onCallerAbort);
      this.#localCalls.delete(ac);
    });
  }

  #route(c: OutgoingCall): Promise<unknown> {
    // While the kernel stops, a stopping service's hook may still call what it depends on; nobody else may call.
    if (this.#stopped && c.from === undefined) {
      return Promise.reject(new AlbedoError('ALBEDO_CLOSED', 'the kernel is stopped', { outcome: 'not_run' }));
    }
    const local = this.#local.get(c.service);
    if (local) return this.#routeLocal(c, local);
    const svc = this.#services.get(c.service);
    if (!svc) return Promise.reject(new AlbedoError('ALBEDO_SERVICE_UNKNOWN', `no service named ${c.service}`, { outcome: 'not_run' }));
    if (svc.stopped) return Promise.reject(new AlbedoError('ALBEDO_CLOSED', `service ${c.service} is stopped`, { outcome: 'not_run' }));
    const slot = this.#slotFor(svc, c.opts);
    const deadline = c.opts.deadline ?? Date.now() + (c.opts.timeoutMs ?? 30_000);
    const timeoutMs = Math.max(0, deadline - Date.now());
    if (timeoutMs === 0) {
      return Promise.reject(
        new AlbedoError('ALBEDO_DEADLINE', `${c.service} ${c.method} passed its deadline before it was sent`, { outcome: 'not_run' }),
      );
    }
    const id = this.#nextId++;
    return new RoutedCall(slot, id, c.service, c.method, c.params, deadline, c.opts.timeoutMs ?? 30_000, c.opts.signal).begin(timeoutMs);
  }

  /** Forgets a key's placement; a worker of its own is stopped. */
  async release(service: ServiceName, key: string): Promise<void> {
    const svc = this.#services.get(service);
    const slot = svc?.byKey.get(key);
    if (!svc || !slot) return;
    svc.byKey.delete(key);
    slot.keys.delete(key);
    if (slot.opts.dedicated && slot.keys.size === 0) {
      svc.slots = svc.slots.filter((s) => s !== slot);
      await slot.stop(2_000);
    }
  }

  /**
   * Subscribes to a service's events (`on('transport', 'connection/closed', fn)`) or the kernel's
   * own (`on('kernel', 'service/lost', fn)`).
   */
  on<S extends ServiceName | 'kernel', E extends keyof ServiceEvents[S] & string>(
    service: S,
    name: E,
    fn: (payload: ServiceEvents[S][E]) => void,
  ): () => void {
    const topic = `${service}:${name}`;
    let set = this.#listeners.get(topic);
    if (!set) this.#listeners.set(topic, (set = new Set()));
    set.add(fn);
    return () => set!.delete(fn);
  }

  #emit(topic: string, payload: unknown): void {
    for (const svc of this.#services.values()) {
      const follows: readonly string[] | undefined = svc.spec.subscribe;
      if (follows?.includes(topic)) for (const slot of svc.slots) slot.forward(topic, payload);
    }
    for (const fn of this.#listeners.get(topic) ?? []) {
      try {
        fn(payload);
      } catch {
        // A listener's bug must not break routing.
      }
    }
  }

  /** Introspection for tests and the status screen. */
  slots(service: ServiceName): ReadonlyArray<SlotInfo> {
    const svc = this.#services.get(service);
    return (svc?.slots ?? []).map((s) => ({
      instance: s.opts.instance,
      state: s.state,
      healthy: s.healthy,
      incarnation: s.incarnation,
      keys: [...s.keys],
      inflight: s.inflight,
      threadId: s.threadId,
    }));
  }

  /** The slot a key lives on, for fault injection. */
  slotOf(service: ServiceName, key?: string): Slot | undefined {
    const svc = this.#services.get(service);
    if (!svc) return undefined;
    return key === undefined ? svc.shared[0] : svc.byKey.get(key);
  }

  /**
   * Stops every service, each after the services that depend on it
   * (ServiceSpec.dependsOn) have stopped, so dependents stop before what they
   * call: the reverse of the start order. Services with no order between them
   * stop together. Each service's stop hooks get `graceMs`, then its threads
   * are terminated. Idempotent: a second call waits for the first.
   */
  stop(graceMs = 5_000): Promise<void> {
    this.#stopping ??= this.#stopAll(graceMs);
    return this.#stopping;
  }

  async #stopAll(graceMs: number): Promise<void> {
    this.#stopped = true;
    const done = new Map<string, Promise<void>>();
    const all = [...this.#services.values()];
    // `path` breaks a cycle of dependsOn (the kernel does not refuse one): the services on it stop together.
    const stopOne = (svc: Service, path: ReadonlySet<string>): Promise<void> => {
      const name = svc.spec.name;
      let p = done.get(name);
      if (p) return p;
      const inner = new Set(path).add(name);
      const dependents = all.filter((d) => d !== svc && !inner.has(d.spec.name) && d.spec.dependsOn?.includes(name));
      p = Promise.all(dependents.map((d) => stopOne(d, inner))).then(async () => {
        svc.stopped = true;
        await Promise.all(svc.slots.map((s) => s.stop(graceMs)));
      });
      done.set(name, p);
      return p;
    };
    await Promise.all(all.map((svc) => stopOne(svc, new Set())));
    this.#listeners.clear();
    this.#local.clear();
    // Local handlers still running for calls nobody can receive any more: abort them (and their deadline timers).
    for (const ac of this.#localCalls) ac.abort(new AlbedoError('ALBEDO_CLOSED', 'the kernel stopped', { outcome: 'unknown' }));
    this.#localCalls.clear();
  }
}
