/**
 * The entry of every service worker: loads the service module named in
 * workerData, answers the kernel's envelopes, and reports ready. It owns no
 * service logic.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { serializeError, deserializeError, AlbedoError } from '../protocol/errors.ts';
import type { FromWorker, ToWorker, WorkerBoot } from '../protocol/services/envelope.ts';
import type { CallContext, ServiceContext, ServiceDefinition } from './service.ts';

const boot = workerData as WorkerBoot;
const port = parentPort!;
const inc = boot.inc;
const post = (m: FromWorker): void => port.postMessage(m);

// A defect in the service (a throw nobody caught, a rejection nobody handled)
// must not pass silently: tell the kernel what it was, so `service/lost`
// names it, and exit, so the supervisor restarts a clean incarnation rather
// than one whose state the defect may have left half-changed.
const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));
let dying = false;
function fatal(reason: string): void {
  if (dying) return;
  dying = true;
  try {
    post({ kind: 'fatal', inc, reason });
  } finally {
    process.exit(1);
  }
}
process.on('uncaughtException', (err) => fatal(`uncaught exception: ${describe(err)}`));
process.on('unhandledRejection', (reason) => fatal(`unhandled rejection: ${describe(reason)}`));

const running = new Map<number, AbortController>();
const outbound = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let nextOutbound = 1;

const base: ServiceContext = {
  instance: boot.instance,
  incarnation: inc,
  options: boot.options,
  emit(name, payload) {
    post({ kind: 'event', inc, name, payload });
  },
  call(service, method, params, opts = {}) {
    const { signal } = opts;
    const aborted = (): AlbedoError =>
      new AlbedoError('ALBEDO_DEADLINE', `${service} ${method} was aborted by the caller`, { outcome: 'unknown', cause: signal?.reason });
    if (signal?.aborted) return Promise.reject(aborted());
    const id = nextOutbound++;
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        if (!outbound.delete(id)) return;
        post({ kind: 'outbound-cancel', id, inc });
        reject(aborted());
      };
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      outbound.set(id, { resolve: (v) => { done(); resolve(v); }, reject: (e) => { done(); reject(e); } });
      signal?.addEventListener('abort', onAbort, { once: true });
      post({ kind: 'outbound', id, inc, service, method, params, deadline });
    });
  },
};

const mod = (await import(pathToFileURL(boot.module).href)) as { default: ServiceDefinition };
const def = mod.default;
if (!def || typeof def.handlers !== 'object') throw new Error(`${boot.module} does not export a service definition`);

async function runCall(id: number, method: string, params: unknown, deadline: number): Promise<void> {
  // Method names come off the wire: `constructor` or `toString` must not reach Object.prototype.
  const handler = Object.hasOwn(def.handlers, method) ? def.handlers[method] : undefined;
  const ac = new AbortController();
  running.set(id, ac);
  try {
    if (typeof handler !== 'function') throw new AlbedoError('ALBEDO_NOT_FOUND', `service ${boot.service} has no method ${method}`, { outcome: 'not_run' });
    const ctx: CallContext = { ...base, signal: ac.signal, deadline };
    const value = await handler(params, ctx);
    if (running.has(id)) post({ kind: 'reply', id, inc, ok: true, value });
  } catch (err) {
    if (running.has(id)) post({ kind: 'reply', id, inc, ok: false, error: serializeError(err) });
  } finally {
    running.delete(id);
  }
}

port.on('message', (m: ToWorker) => {
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
    case 'ping':
      post({ kind: 'pong', seq: m.seq, inc });
      break;
    case 'stop':
      void Promise.resolve(def.stop?.()).finally(() => process.exit(0));
      break;
    case 'fault':
      if (m.fault === 'crash') setImmediate(() => { throw new Error('injected crash'); });
      // A hang blocks the event loop for good; only the kernel's liveness check ends it.
      else for (;;) { /* hang */ }
      break;
  }
});

await def.start?.(base);
post({ kind: 'ready', inc });
