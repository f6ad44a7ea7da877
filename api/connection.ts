/**
 * A connection as the embedding API hands it out: the negotiated facts, the
 * catalogue, and the operations. Every operation goes through the kernel to
 * the transport worker that holds the actor. When that worker is lost, the
 * calls in flight fail as unknown outcomes (never retried) and the next call
 * opens the connection again: on the restarted worker, or, if that worker's
 * slot passed its restart intensity, on a healthy one (the kernel moves the
 * key when the reopen arrives).
 */
import { EventEmitter } from 'node:events';
import { AlbedoError } from '../protocol/errors.ts';
import type { Kernel } from '../kernel/kernel.ts';
import type { ResolvedServer } from '../protocol/config.ts';
import type {
  Catalogue,
  CallToolResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
  Tool,
} from '../protocol/mcp.ts';
import type { ClientOp, ConnectionInfo, LoggingLevel, OpenResult } from '../protocol/services/transport.ts';
import type { SessionRequestOp } from '../protocol/services/composer.ts';
import { withProgress, type OnProgress } from './progress.ts';

export interface OpOptions {
  /** Overrides the server's callTimeoutMs for this request. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A call's options: `onProgress` is told the server's progress reports on it (the API chooses the progress token). */
export interface CallOptions extends OpOptions {
  onProgress?: OnProgress;
}

/** Kernel deadline slack over the MCP request's own timeout, so the worker's timeout (which cancels on the wire) fires first. */
const KERNEL_SLACK_MS = 2_000;

export interface ConnectionEvents {
  catalogue: [Catalogue];
  dropped: [AlbedoError];
  /** A warning, with a stable code when it has one (e.g. ALBEDO_CATALOGUE_TOO_LARGE on rediscovery). */
  warning: [string, string | undefined];
  /** The server's `notifications/message` (data pruned and its strings redacted). */
  log: [{ level: LoggingLevel; logger?: string; data: unknown }];
  /** `notifications/resources/updated` for a resource subscribed to with `request({ method: 'resources/subscribe', uri })`. */
  'resource-updated': [string];
  closed: [];
}

/** The transport events a connection follows only while it has listeners for them. */
const FOLLOWED = { log: 'connection/log', 'resource-updated': 'connection/resource-updated' } as const;

export class Connection extends EventEmitter<ConnectionEvents> {
  readonly id: string;
  readonly name: string;
  readonly server: ResolvedServer;
  readonly isolate: boolean;
  #kernel: Kernel;
  #eraCachePath: string | null;
  #capabilities: Record<string, unknown>;
  #opened: OpenResult;
  #reopening: Promise<void> | undefined;
  #stale = false;
  #closed = false;
  #onClose: () => void;

  constructor(args: {
    id: string;
    name: string;
    server: ResolvedServer;
    isolate: boolean;
    kernel: Kernel;
    eraCachePath: string | null;
    capabilities: Record<string, unknown>;
    opened: OpenResult;
    onClose: () => void;
  }) {
    super();
    this.id = args.id;
    this.name = args.name;
    this.server = args.server;
    this.isolate = args.isolate;
    this.#kernel = args.kernel;
    this.#eraCachePath = args.eraCachePath;
    this.#capabilities = args.capabilities;
    this.#opened = args.opened;
    this.#onClose = args.onClose;
    // The kernel's log and resource events are followed from the first listener on: most connections never have one.
    (this as EventEmitter).on('newListener', (event: string | symbol) => {
      if (event === 'log' && !this.#offLog) {
        this.#offLog = this.#kernel.on('transport', FOLLOWED.log, (e) => {
          if (e.id !== this.id) return;
          this.emit('log', e.logger === undefined ? { level: e.level, data: e.data } : { level: e.level, logger: e.logger, data: e.data });
        });
      } else if (event === 'resource-updated' && !this.#offUpdated) {
        this.#offUpdated = this.#kernel.on('transport', FOLLOWED['resource-updated'], (e) => {
          if (e.id === this.id) this.emit('resource-updated', e.uri);
        });
      }
    });
  }

  #offLog: (() => void) | undefined;
  #offUpdated: (() => void) | undefined;

  get info(): ConnectionInfo {
    const { catalogue: _c, warnings: _w, ...info } = this.#opened;
    return info;
  }
  get era(): ConnectionInfo['era'] {
    return this.#opened.era;
  }
  get protocolVersion(): string {
    return this.#opened.protocolVersion;
  }
  get catalogue(): Catalogue {
    return this.#opened.catalogue;
  }
  get warnings(): readonly string[] {
    return this.#opened.warnings;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /** The worker holding this actor was lost: the next call opens it again. */
  markStale(): void {
    this.#stale = true;
  }

  /** A list change produced a new catalogue. */
  setCatalogue(c: Catalogue): void {
    this.#opened = { ...this.#opened, catalogue: c };
    this.emit('catalogue', c);
  }

  async #reopen(): Promise<void> {
    this.#reopening ??= (async () => {
      const opened = await this.#kernel.call(
        'transport',
        'connection/open',
        { id: this.id, server: this.server, eraCachePath: this.#eraCachePath, capabilities: this.#capabilities },
        { key: this.id, timeoutMs: this.server.startupTimeoutMs * 2 + KERNEL_SLACK_MS },
      );
      this.#stale = false;
      const changed = JSON.stringify(opened.catalogue) !== JSON.stringify(this.#opened.catalogue);
      this.#opened = opened;
      if (changed) this.emit('catalogue', opened.catalogue);
    })().finally(() => {
      this.#reopening = undefined;
    });
    return this.#reopening;
  }

  async #op(op: ClientOp, opts: OpOptions = {}): Promise<unknown> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CONNECTION_CLOSED', `connection ${this.name} is closed`, { outcome: 'not_run' });
    if (this.#stale) await this.#reopen();
    const timeoutMs = opts.timeoutMs ?? this.server.callTimeoutMs;
    // A dropped server is dialled again inside the worker, within the startup budget.
    return this.#kernel.call(
      'transport',
      'connection/request',
      { id: this.id, op, timeoutMs },
      {
        key: this.id,
        timeoutMs: timeoutMs + this.server.startupTimeoutMs + KERNEL_SLACK_MS,
        signal: opts.signal,
      },
    );
  }

  /** `op` with a fresh progress token followed for `opts.onProgress`, or as it is without one. */
  #progressing(op: Extract<ClientOp, { progressToken?: string | number }>, opts: CallOptions | undefined): Promise<unknown> {
    const fn = opts?.onProgress;
    if (fn === undefined) return this.#op(op, opts);
    if (typeof fn !== 'function') {
      return Promise.reject(new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'onProgress must be a function', { outcome: 'not_run' }));
    }
    return withProgress(this.#kernel, this.id, fn, (token) => this.#op({ ...op, progressToken: token }, opts));
  }

  /** Calls a tool. A tool-reported failure is a result with isError, not an exception. */
  callTool(name: string, args: Record<string, unknown> = {}, opts?: CallOptions): Promise<CallToolResult> {
    return this.#progressing({ method: 'tools/call', name, arguments: args }, opts) as Promise<CallToolResult>;
  }
  readResource(uri: string, opts?: CallOptions): Promise<ReadResourceResult> {
    return this.#progressing({ method: 'resources/read', uri }, opts) as Promise<ReadResourceResult>;
  }
  getPrompt(name: string, args: Record<string, string> = {}, opts?: CallOptions): Promise<GetPromptResult> {
    return this.#progressing({ method: 'prompts/get', name, arguments: args }, opts) as Promise<GetPromptResult>;
  }
  /**
   * One request that is not a call: `completion/complete`, `logging/setLevel`, `resources/subscribe`
   * or `resources/unsubscribe` (a server that does not declare the capability: ALBEDO_NOT_FOUND, not
   * run, `data.capability`). Log messages and resource updates come as the `log` and
   * `resource-updated` events.
   */
  request(op: SessionRequestOp, opts?: OpOptions): Promise<unknown> {
    const method = typeof op === 'object' && op !== null ? (op as { method?: unknown }).method : undefined;
    if (
      method !== 'completion/complete' &&
      method !== 'logging/setLevel' &&
      method !== 'resources/subscribe' &&
      method !== 'resources/unsubscribe'
    ) {
      const why = 'request() sends completion/complete, logging/setLevel, resources/subscribe or resources/unsubscribe';
      return Promise.reject(new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, { outcome: 'not_run' }));
    }
    return this.#op(op, opts);
  }
  /** Fresh lists from the server (all pages), not the saved catalogue. */
  listTools(opts?: OpOptions): Promise<Tool[]> {
    return this.#op({ method: 'tools/list' }, opts) as Promise<Tool[]>;
  }
  listResources(opts?: OpOptions): Promise<Resource[]> {
    return this.#op({ method: 'resources/list' }, opts) as Promise<Resource[]>;
  }
  listResourceTemplates(opts?: OpOptions): Promise<ResourceTemplate[]> {
    return this.#op({ method: 'resources/templates/list' }, opts) as Promise<ResourceTemplate[]>;
  }
  listPrompts(opts?: OpOptions): Promise<Prompt[]> {
    return this.#op({ method: 'prompts/list' }, opts) as Promise<Prompt[]>;
  }
  ping(opts?: OpOptions): Promise<unknown> {
    return this.#op({ method: 'ping' }, opts);
  }

  /** Closes the connection; resolves once the server's whole process group is reaped. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#kernel.call('transport', 'connection/close', { id: this.id }, { key: this.id, timeoutMs: 15_000 });
    } catch {
      // A lost worker took the server with it (its launcher saw the lifeline close).
    }
    await this.#kernel.release('transport', this.id);
    this.#offLog?.();
    this.#offUpdated?.();
    this.#onClose();
    this.emit('closed');
  }
}
