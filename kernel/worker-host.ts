/**
 * The entry of every service worker: loads the service module named in
 * workerData, answers the kernel's envelopes, and reports ready. It owns no
 * service logic.
 *
 * Envelopes are batched both ways: the kernel's arrive as arrays (one
 * message per turn of its loop), and everything this worker posts in one
 * turn goes as one message, flushed after the loop's I/O phase (kernel/slot.ts
 * says why not in a microtask) — in order, so a reply
 * never overtakes an event emitted before it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { serializeError, deserializeError, AlbedoError, type SerializedError } from '../protocol/errors.ts';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { shapeOf, MAX_ENVELOPE_DEPTH } from '../protocol/bounds.ts';
import type { FromWorker, ToWorker, WorkerBoot } from '../protocol/services/envelope.ts';
import type { MethodOf, ParamsOf, ResultOf, ServiceName } from '../protocol/services/maps.ts';
import type { OutboundOptions, UncheckedCallContext, UncheckedDefinition, WorkerContext } from './service.ts';

const boot = workerData as WorkerBoot;
const port = parentPort!;
const inc = boot.inc;

let queue: FromWorker[] = [];
let flushing = false;
/** Queues an envelope; the turn's envelopes go as one message. */
function post(m: FromWorker): void {
  queue.push(m);
  if (!flushing) {
    flushing = true;
    setImmediate(flush);
  }
}
function flush(): void {
  flushing = false;
  const batch = queue;
  queue = [];
  if (batch.length === 0) return;
  try {
    port.postMessage(batch);
  } catch {
    // One envelope that cannot be cloned must not take the others down: each goes alone, and that one is answered for.
    for (const m of batch) {
      try {
        port.postMessage([m]);
      } catch (err) {
        unsendable(m, err);
      }
    }
  }
}

/**
 * Whether a value can cross to the kernel's thread. Structured clone
 * recurses: a value nested a few thousand levels deep (server data, in a
 * result or an error) is silently dropped on the way, deeper still it
 * throws. Such a value never leaves this worker.
 */
const crosses = (value: unknown): boolean => shapeOf(value, MAX_ENVELOPE_DEPTH).depth <= MAX_ENVELOPE_DEPTH;

/**
 * Strings past this many characters in one reply make it large. Structured
 * clone copies such a reply once, into the kernel's heap; what lingers is
 * this worker's own copy (the parsed result, the line it came from), garbage
 * the moment the reply is posted but kept until this heap's next major GC,
 * which an idle worker may not run for a long while: two heaps then hold the
 * payload. So a large reply is followed by a collection here, once the
 * handler has returned. Measured on a 16 MiB tool result (three in a row):
 * +110 MB peak RSS instead of +175 MB; sending it as transferable JSON bytes
 * instead was worse (+240 MB: the encoding is two more copies).
 */
const LARGE_REPLY_CHARS = 4 * 2 ** 20;
let collecting = false;
let gc: (() => void) | undefined;
/** A full collection now (the flag is set at first use). */
function collectNow(): void {
  if (!gc) {
    setFlagsFromString('--expose_gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}
function collectSoon(): void {
  if (collecting) return;
  collecting = true;
  setImmediate(() => {
    collecting = false;
    collectNow();
  });
}
const tooDeep = (what: string): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_RESPONSE', `${what} nests deeper than ${MAX_ENVELOPE_DEPTH} levels and cannot cross threads`, {
    outcome: 'unknown',
  });

/**
 * What becomes of an envelope whose clone failed: a reply becomes a small
 * error reply, an outbound call fails as not run, an event is dropped
 * (events are news, and a defect there must not fail the caller).
 */
function unsendable(m: FromWorker, err: unknown): void {
  if (m.kind === 'reply') {
    const why = `the reply could not cross threads: ${describe(err)}`;
    const error = serializeError(new AlbedoError('ALBEDO_INTERNAL', why, { outcome: 'unknown' }));
    port.postMessage([{ kind: 'reply', id: m.id, inc, ok: false, error } satisfies FromWorker]);
  } else if (m.kind === 'outbound') {
    const p = outbound.get(m.id);
    outbound.delete(m.id);
    const why = `${m.service} ${m.method}: its params could not cross threads: ${describe(err)}`;
    p?.reject(new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, { outcome: 'not_run' }));
  }
}

/** Posts a reply; one that cannot cross (too deep, or the clone fails) becomes a small error reply instead. */
function reply(id: number, ok: boolean, value: unknown, error?: SerializedError): void {
  let m: FromWorker = ok ? { kind: 'reply', id, inc, ok: true, value } : { kind: 'reply', id, inc, ok: false, error };
  const shape = shapeOf(ok ? value : error, MAX_ENVELOPE_DEPTH);
  if (shape.chars >= LARGE_REPLY_CHARS) collectSoon();
  if (shape.depth > MAX_ENVELOPE_DEPTH) {
    // An error's data is ours to drop; its code and message still say what happened.
    m =
      ok || !error
        ? { kind: 'reply', id, inc, ok: false, error: serializeError(tooDeep('the result')) }
        : {
            kind: 'reply',
            id,
            inc,
            ok: false,
            error: { name: 'AlbedoError', code: error.code, message: error.message, outcome: error.outcome },
          };
  }
  post(m);
}

// A defect in the service (a throw nobody caught, a rejection nobody handled)
// must not pass silently: tell the kernel what it was, so `service/lost`
// names it, and exit, so the supervisor restarts a clean incarnation rather
// than one whose state the defect may have left half-changed.
const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));
let dying = false;
function fatal(reason: string, cause: 'uncaught_exception' | 'unhandled_rejection'): void {
  if (dying) return;
  dying = true;
  try {
    // What this worker already answered goes first; the kernel then learns why it is going.
    flush();
    port.postMessage([{ kind: 'fatal', inc, reason, cause } satisfies FromWorker]);
  } finally {
    process.exit(1);
  }
}
process.on('uncaughtException', (err) => fatal(`uncaught exception: ${describe(err)}`, 'uncaught_exception'));
process.on('unhandledRejection', (reason) => fatal(`unhandled rejection: ${describe(reason)}`, 'unhandled_rejection'));

const running = new Map<number, AbortController>();
const outbound = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let nextOutbound = 1;

/**
 * A call to another service through the kernel. Typed by the maps for a
 * service defined with defineService; what comes back is what the callee's
 * handler returned, which its own defineService checked against the same map.
 */
function callOut<T extends ServiceName, M extends MethodOf<T>>(
  service: T,
  method: M,
  params: ParamsOf<T, M>,
  opts?: OutboundOptions,
): Promise<ResultOf<T, M>>;
function callOut(service: string, method: string, params: unknown, opts?: OutboundOptions): Promise<unknown>;
function callOut(service: string, method: string, params: unknown, opts: OutboundOptions = {}): Promise<unknown> {
  const { signal } = opts;
  const aborted = (): AlbedoError =>
    new AlbedoError('ALBEDO_DEADLINE', `${service} ${method} was aborted by the caller`, { outcome: 'unknown', cause: signal?.reason });
  if (signal?.aborted) return Promise.reject(aborted());
  if (!crosses(params)) return Promise.reject(tooDeep(`the params of ${service} ${method}`));
  const id = nextOutbound++;
  const placement = { ...(opts.key === undefined ? {} : { key: opts.key }), ...(opts.isolate ? { isolate: true } : {}) };
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      if (!outbound.delete(id)) return;
      post({ kind: 'outbound-cancel', id, inc });
      reject(aborted());
    };
    // The kernel answers by the deadline; this timer is the backstop if its answer never comes.
    const timer = setTimeout(() => {
      if (!outbound.delete(id)) return;
      done();
      reject(new AlbedoError('ALBEDO_DEADLINE', `${service} ${method} did not answer within ${timeoutMs} ms`, { outcome: 'unknown' }));
    }, timeoutMs + 1_000);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    // Set before it is posted: params that cannot be cloned fail it at the flush (unsendable).
    outbound.set(id, {
      resolve: (v) => {
        done();
        resolve(v);
      },
      reject: (e) => {
        done();
        reject(e);
      },
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    post({ kind: 'outbound', id, inc, service, method, params, deadline, ...placement });
  });
}

const base: WorkerContext = {
  instance: boot.instance,
  incarnation: inc,
  options: boot.options,
  emit(name, payload) {
    // An event that cannot cross is dropped: events are news, and a defect here must not fail the caller.
    if (!crosses(payload)) return;
    post({ kind: 'event', inc, name, payload });
  },
  call: callOut,
  release(service, key) {
    post({ kind: 'release', inc, service, key });
  },
};

// Loaded by path, its types are gone: what defineService checked at compile time, only its name is left to check here.
const mod = (await import(pathToFileURL(boot.module).href)) as { default: UncheckedDefinition };
const def = mod.default;
if (!def || typeof def.handlers !== 'object' || def.handlers === null) {
  throw new Error(`${boot.module} does not export a service definition`);
}
// A module implements the contract it was defined for: one started under another service's name would answer the wrong messages.
// One that names none (a plain object that forgot `service`) was checked against no contract; only a module made with
// defineUncheckedService (a test's fixture, outside the maps) runs under any name.
if (def.unchecked !== true && def.service !== boot.service) {
  const which = typeof def.service === 'string' ? `defines the ${def.service} service` : 'names no service';
  throw new Error(`${boot.module} ${which}, not ${boot.service}: its default export must be defineService('${boot.service}', ...)`);
}

/**
 * The test-only methods (FaultMethods in protocol/services/envelope.ts),
 * answered by every worker whatever its service, only when fault injection is
 * on: without it they are not here, and a call answers ALBEDO_NOT_FOUND as
 * for any method the service does not have.
 */
const faultHandlers: Record<string, (params: any) => unknown> = boot.faults
  ? {
      'kernel/echo': (p: unknown) => p,
      'worker/stats': (p: { gc?: boolean } | undefined) => {
        if (p?.gc) collectNow();
        const h = getHeapStatistics();
        // rss is the process's, not this worker's: it catches native buffers (a pipe write libuv still holds).
        return { ...def.stats?.(), heapUsed: h.used_heap_size, external: h.external_memory, rss: process.memoryUsage.rss() };
      },
    }
  : {};

async function runCall(id: number, method: string, params: unknown, deadline: number): Promise<void> {
  // Method names come off the wire: `constructor` or `toString` must not reach Object.prototype.
  const handler = Object.hasOwn(faultHandlers, method)
    ? faultHandlers[method]
    : Object.hasOwn(def.handlers, method)
      ? def.handlers[method]
      : undefined;
  const ac = new AbortController();
  running.set(id, ac);
  try {
    if (typeof handler !== 'function')
      throw new AlbedoError('ALBEDO_NOT_FOUND', `service ${boot.service} has no method ${method}`, { outcome: 'not_run' });
    const ctx: UncheckedCallContext = { ...base, signal: ac.signal, deadline };
    const value = await handler(params, ctx);
    if (running.has(id)) reply(id, true, value);
  } catch (err) {
    if (running.has(id)) reply(id, false, undefined, serializeError(err));
  } finally {
    running.delete(id);
  }
}

port.on('message', (batch: ToWorker[]) => {
  for (const m of batch) onEnvelope(m);
});

function onEnvelope(m: ToWorker): void {
  switch (m.kind) {
    case 'call':
      void runCall(m.id, m.method, m.params, m.deadline);
      break;
    case 'cancel': {
      const ac = running.get(m.id);
      running.delete(m.id);
      ac?.abort(new AlbedoError('ALBEDO_DEADLINE', 'the caller gave up on this call'));
      break;
    }
    case 'outbound-reply': {
      const p = outbound.get(m.id);
      outbound.delete(m.id);
      if (!p) break;
      if (m.ok) p.resolve(m.value);
      else p.reject(deserializeError(m.error!));
      break;
    }
    case 'forwarded': {
      // Topics come from the kernel, but keep Object.prototype out of the lookup all the same.
      const on = def.events && Object.hasOwn(def.events, m.topic) ? def.events[m.topic] : undefined;
      on?.(m.payload, base);
      break;
    }
    case 'ping':
      post({ kind: 'pong', seq: m.seq, inc });
      break;
    case 'stop':
      void Promise.resolve(def.stop?.()).finally(() => {
        flush();
        process.exit(0);
      });
      break;
    case 'fault':
      // Fault injection is opt-in (WorkerBoot.faults): a worker without it ignores the envelope.
      if (!boot.faults) break;
      if (m.fault === 'crash')
        setImmediate(() => {
          throw new Error('injected crash');
        });
      // A hang blocks the event loop for good; only the kernel's liveness check ends it.
      else
        for (;;) {
          /* hang */
        }
      break;
  }
}

await def.start?.(base);
post({ kind: 'ready', inc });
