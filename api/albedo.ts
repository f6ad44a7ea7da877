/**
 * The embedding API: `createAlbedo()` starts the kernel in-process with its
 * worker-thread services, and hands out connections. Everything above the
 * kernel (the CLI, benchmarks, harnesses) uses this, never internals.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { Kernel, type ServiceSpec } from '../kernel/kernel.ts';
import { Faults } from '../kernel/faults.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { ServerConfigInput } from '../protocol/config.ts';
import type { Implementation } from '../protocol/mcp.ts';
import { parseServerConfig, resolveServer } from './resolve.ts';
import { capabilitiesFor, INPUT_METHODS, type ClientHandlers } from '../protocol/client-input.ts';
import { Connection } from './connection.ts';

const TRANSPORT = fileURLToPath(new URL('../services/transport/service.ts', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export interface AlbedoOptions {
  /** State directory ($ALBEDO_HOME, default ~/.albedo); null keeps nothing on disk (no era cache). */
  home?: string | null;
  /** Shared transport workers (connections are spread over them). Default 2. */
  transportWorkers?: number;
  clientInfo?: Implementation;
  /**
   * Handlers for what servers may ask of the client (elicitation, sampling,
   * roots). Each one present declares its capability; with none (the
   * daemon's default) nothing is declared and a server's request for input
   * fails the call with ALBEDO_INPUT_REQUIRED. `connect` may override them.
   */
  handlers?: ClientHandlers;
  /** Supervision tuning, mostly for tests. */
  supervision?: Pick<ServiceSpec, 'restart' | 'heartbeat'>;
}

export interface ConnectOptions {
  /** A name for messages and tool prefixes; defaults to the command's basename or the URL's host. */
  name?: string;
  /** This connection's input handlers, instead of the instance's. */
  handlers?: ClientHandlers;
}

export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.ALBEDO_HOME || path.join(os.homedir(), '.albedo');
}

export class Albedo {
  readonly kernel: Kernel;
  readonly faults: Faults;
  readonly home: string | null;
  #eraCachePath: string | null;
  #connections = new Map<string, Connection>();
  #handlers: ClientHandlers | undefined;
  #handlersById = new Map<string, ClientHandlers | undefined>();
  #closed = false;
  #unsubscribe: Array<() => void> = [];

  constructor(opts: AlbedoOptions = {}) {
    this.home = opts.home === undefined ? defaultHome() : opts.home;
    this.#eraCachePath = this.home === null ? null : path.join(this.home, 'store');
    if (this.#eraCachePath) mkdirSync(this.#eraCachePath, { recursive: true, mode: 0o700 });
    this.kernel = new Kernel();
    this.faults = new Faults(this.kernel);
    this.kernel.start({
      name: 'transport',
      module: TRANSPORT,
      instances: opts.transportWorkers ?? 2,
      options: { clientInfo: opts.clientInfo ?? { name: 'albedo', version: pkg.version } },
      ...opts.supervision,
    });
    this.#handlers = opts.handlers;
    this.kernel.provide('client', {
      'client/input': async (p: { id: string; method: string; params: unknown }, ctx: { signal: AbortSignal }) => {
        const cap = INPUT_METHODS[p.method];
        const handler = cap ? this.#handlersById.get(p.id)?.[cap] : undefined;
        if (!handler) throw new AlbedoError('ALBEDO_INPUT_REQUIRED', `no ${cap ?? p.method} handler is registered for this connection`, { outcome: 'not_run' });
        const result = await handler((p.params ?? {}) as Record<string, unknown>, { connection: this.#connections.get(p.id)?.name ?? p.id, signal: ctx.signal });
        if (!result || typeof result !== 'object' || Array.isArray(result)) throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `the ${cap} handler must return an object`, { outcome: 'not_run' });
        return result;
      },
    });
    const byId = (id: string): Connection | undefined => this.#connections.get(id);
    this.#unsubscribe.push(
      this.kernel.on('transport', 'connection/catalogue-changed', (e) => byId(e.id)?.setCatalogue(e.catalogue)),
      this.kernel.on('transport', 'connection/dropped', (e) => {
        const c = byId(e.id);
        if (c) c.emit('dropped', new AlbedoError(e.error.code, e.error.message, { outcome: e.error.outcome, data: e.error.data }));
      }),
      this.kernel.on('transport', 'connection/warned', (e) => byId(e.id)?.emit('warning', e.message)),
      this.kernel.on('kernel', 'service/lost', (e) => {
        if (e.service !== 'transport') return;
        for (const k of e.keys) {
          const c = byId(k);
          if (!c) continue;
          c.markStale();
          c.emit('dropped', new AlbedoError('ALBEDO_SERVICE_LOST', `the transport worker holding ${c.name} was lost (${e.reason}); the next call reconnects`, { outcome: 'unknown' }));
        }
      }),
    );
  }

  /** Starts a server, negotiates its era and discovers its catalogue. Bad config is refused before anything runs. */
  async connect(config: ServerConfigInput, opts: ConnectOptions = {}): Promise<Connection> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    const parsed = parseServerConfig(config);
    const server = resolveServer(parsed);
    const id = randomUUID();
    const handlers = opts.handlers ?? this.#handlers;
    const capabilities = capabilitiesFor(handlers);
    this.#handlersById.set(id, handlers);
    const name = opts.name ?? (parsed.type === 'http' ? new URL(parsed.url).host : path.basename(parsed.command));
    try {
      const opened = await this.kernel.call('transport', 'connection/open', { id, server, eraCachePath: this.#eraCachePath, capabilities }, { key: id, isolate: parsed.isolate, timeoutMs: server.startupTimeoutMs * 2 + 5_000 });
      const conn = new Connection({ id, name, server, isolate: parsed.isolate, kernel: this.kernel, eraCachePath: this.#eraCachePath, capabilities, opened, onClose: () => { this.#connections.delete(id); this.#handlersById.delete(id); } });
      this.#connections.set(id, conn);
      return conn;
    } catch (err) {
      this.#handlersById.delete(id);
      await this.kernel.release('transport', id);
      throw err;
    }
  }

  get connections(): Connection[] {
    return [...this.#connections.values()];
  }

  /** Closes every connection (reaping every server) and stops the kernel. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled(this.connections.map((c) => c.close()));
    for (const u of this.#unsubscribe) u();
    await this.kernel.stop(10_000);
  }
}

/** Starts an Albedo kernel in this process. */
export async function createAlbedo(opts: AlbedoOptions = {}): Promise<Albedo> {
  return new Albedo(opts);
}
