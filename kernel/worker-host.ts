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
    const id = nextOutbound++;
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    return new Promise((resolve, reject) => {
      outbound.set(id, { resolve, reject });
      post({ kind: 'outbound', id, inc, service, method, params, deadline });
    });
  },
};

const mod = (await import(pathToFileURL(boot.module).href)) as { default: ServiceDefinition };
const def = mod.default;
if (!def || typeof def.handlers !== 'object') throw new Error(`${boot.module} does not export a service definition`);

async function runCall(id: number, method: string, params: unknown, deadline: number): Promise<void> {
  const handler = def.handlers[method];
  const ac = new AbortController();
  running.set(id, ac);
  try {
    if (!handler) throw new AlbedoError('ALBEDO_NOT_FOUND', `service ${boot.service} has no method ${method}`, { outcome: 'not_run' });
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
