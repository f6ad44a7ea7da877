/**
 * What a gateway serves, whichever way in (HTTP or stdio) and whichever era
 * the client speaks: its identity, its lists and its operations. Two kinds
 * (composed.ts over a whole session, pass-through.ts over one server of
 * one); mcp-server.ts turns either into the SDK's `Server`.
 */
import type { Implementation } from '../../protocol/mcp.ts';

/** A JSON object as MCP carries it (lists' items, results). */
export type Json = Record<string, unknown>;

export type ListKind = 'tools' | 'resources' | 'prompts';

export interface OpContext {
  signal: AbortSignal;
  /**
   * Asks the host that made this request for input an upstream server needs meanwhile (elicitation/create,
   * sampling/createMessage, roots/list), on the request's own stream; rejects with ALBEDO_INPUT_REQUIRED when the host
   * did not declare the capability (or speaks 2026-07-28, which has no server-to-client requests).
   */
  input?(method: string, params: Json, signal: AbortSignal, key?: string): Promise<Json>;
  /** What the host declared it can be asked (elicitation, sampling, roots): the upstream is told only these. */
  capabilities?: Json;
  /** The upstream's progress on this request, for the host (when it asked for progress). */
  progress?(p: { progress: number; total?: number; message?: string }): void;
  /** An upstream log message while this request runs, for the host (at or above the level it set). */
  log?(m: { level: string; logger?: string; data: unknown }): void;
}

/** What a session call of the gateway carries: the host request's signal, progress, and its context for input. */
type ProgressReport = { progress: number; total?: number; message?: string };

export function callOptions(ctx: OpContext): {
  signal: AbortSignal;
  onProgress: (p: ProgressReport) => void;
  context: OpContext;
  capabilities?: Json;
} {
  const o = { signal: ctx.signal, onProgress: (p: ProgressReport) => ctx.progress?.(p), context: ctx };
  return ctx.capabilities === undefined ? o : { ...o, capabilities: ctx.capabilities };
}

export interface GatewayBackend {
  readonly kind: 'composed' | 'pass-through';
  /** Reads what info(), has() and instructions() answer from (before each server is built). */
  prepare(): Promise<void>;
  /** serverInfo shown to the client. */
  info(): Implementation;
  /** What the client may list; resources and prompts only where there are some to serve. */
  has(kind: ListKind): boolean;
  instructions(): string | undefined;
  listTools(): Promise<Json[]>;
  /** Each tool's input schema by name, as listTools gives them (kept until the tools change). */
  toolSchemas(): Promise<ReadonlyMap<string, Json>>;
  callTool(name: string, args: Json, ctx: OpContext): Promise<Json>;
  listResources(): Promise<Json[]>;
  listResourceTemplates(): Promise<Json[]>;
  readResource(uri: string, ctx: OpContext): Promise<Json>;
  listPrompts(): Promise<Json[]>;
  getPrompt(name: string, args: Record<string, string>, ctx: OpContext): Promise<Json>;
  /** The host to ask for input on behalf of `server` (its one call in flight), if any. */
  inputFor(server: string): OpContext['input'] | undefined;
  /** The calls in flight on `server`. */
  callsOn(server: string): readonly OpContext[];
  /** Whether the upstream offers `completions` / resource `subscribe` (a pass-through gateway's server; composed: no). */
  offers(what: 'completions' | 'subscribe'): boolean;
  /** completion/complete, resources/subscribe and resources/unsubscribe on the upstream server. */
  complete(params: Json, ctx: OpContext): Promise<Json>;
  subscribe(uri: string, on: boolean): Promise<void>;
  /** The log level the upstream servers are asked for (the most verbose any host asked for). */
  setLogLevel(level: string): Promise<void>;
  /** The session's server names (a pass-through gateway: its one server). */
  servers(): string[];
  /** Tells `fn` when a list changed (a new generation, a new catalogue); returns the unsubscribe. */
  onListChanged(fn: (kind: ListKind) => void): () => void;
  /** The session behind it is gone (closed, or its definition changed): clients get errors until they reconnect. */
  readonly closed: boolean;
}

/** The requests in flight per upstream server, so an input request of that server finds the host to ask. */
export class InFlight {
  #by = new Map<string, OpContext[]>();
  /** Runs `fn` with `ctx` registered for `server`. */
  async run<T>(server: string | null | undefined, ctx: OpContext, fn: () => Promise<T>): Promise<T> {
    if (!server || !ctx.input) return fn();
    const list = this.#by.get(server) ?? [];
    list.push(ctx);
    this.#by.set(server, list);
    try {
      return await fn();
    } finally {
      list.splice(list.indexOf(ctx), 1);
      if (!list.length) this.#by.delete(server);
    }
  }
  /**
   * The host to ask for a question of `server` that does not say whose call it is (a 2025-era server's own request):
   * only when one call is in flight on it, never a guess between two hosts' calls.
   */
  latest(server: string): OpContext['input'] | undefined {
    const list = this.#by.get(server);
    if (!list || list.length !== 1) return undefined;
    const ctx = list[0]!;
    return ctx.input?.bind(ctx);
  }

  /** Every call in flight on `server` (for what it sends meanwhile: log messages). */
  calls(server: string): readonly OpContext[] {
    return this.#by.get(server) ?? [];
  }
}

/** A set of listeners, each called in its own try (a client's bug must not stop the others). */
export class Listeners<T> {
  #fns = new Set<(v: T) => void>();
  add(fn: (v: T) => void): () => void {
    this.#fns.add(fn);
    return () => this.#fns.delete(fn);
  }
  emit(v: T): void {
    for (const fn of this.#fns) {
      try {
        fn(v);
      } catch {
        /* a listener's failure is its own */
      }
    }
  }
  get size(): number {
    return this.#fns.size;
  }
}
