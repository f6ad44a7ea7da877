/**
 * Calls sent from the owner's thread straight to an open connection's
 * transport worker (the direct path of api/sessions.ts), counted per
 * connection so the composer can wait for them to settle before it closes
 * the connection (`host/drain`, which this provides on the kernel's thread).
 */
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { ClientOp } from '../protocol/services/transport.ts';

/** Kernel deadline slack over the MCP request's own timeout, so the worker's timeout (which cancels on the wire) fires first. */
const KERNEL_SLACK_MS = 2_000;
/** How many retired connection ids are remembered (each a short string; the oldest go first). */
const RETIRED_MAX = 10_000;

export class DirectCalls {
  #kernel: Kernel;
  #inflight = new Map<string, number>();
  #waiters = new Map<string, Array<() => void>>();
  /** Connections the composer is closing: no new direct call goes to them (the composer answers those instead). */
  #retiring = new Set<string>();

  constructor(kernel: Kernel) {
    this.#kernel = kernel;
  }

  /** Registers `host/drain` on the kernel. */
  provide(): void {
    this.#kernel.provide('host', {
      'host/drain': async (p: { ids: string[] }) => {
        const ids = (Array.isArray(p?.ids) ? p.ids : []).map(String);
        for (const id of ids) this.#retire(id);
        await Promise.all(ids.map((id) => this.drained(id)));
        return {};
      },
    });
  }

  /** The composer no longer names these connections (a newer snapshot left them out): their retirement is over. */
  forget(ids: readonly string[]): void {
    for (const id of ids) if (!this.#inflight.has(id)) this.#retiring.delete(id);
  }

  /** Connections a snapshot newly names (a shared one opened again after its close): direct calls may go to them. */
  revive(ids: readonly string[]): void {
    for (const id of ids) this.#retiring.delete(id);
  }

  #retire(id: string): void {
    this.#retiring.add(id);
    if (this.#retiring.size > RETIRED_MAX) this.#retiring.delete(this.#retiring.values().next().value!);
  }

  /** Resolves once no direct call is in flight on `id`. */
  drained(id: string): Promise<void> {
    if (!this.#inflight.get(id)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.#waiters.get(id) ?? [];
      list.push(resolve);
      this.#waiters.set(id, list);
    });
  }

  /**
   * Sends one request straight to the connection's transport worker. A
   * connection being retired refuses at once with ALBEDO_NOT_FOUND (not run):
   * the caller asks the composer instead.
   */
  async request(id: string, op: ClientOp, o: { timeoutMs: number; startupTimeoutMs: number; signal?: AbortSignal }): Promise<unknown> {
    if (this.#retiring.has(id)) throw new AlbedoError('ALBEDO_NOT_FOUND', 'the connection is being closed', { outcome: 'not_run' });
    this.#inflight.set(id, (this.#inflight.get(id) ?? 0) + 1);
    try {
      // A dropped server is dialled again inside the worker, within the startup budget.
      return await this.#kernel.call(
        'transport',
        'connection/request',
        { id, op, timeoutMs: o.timeoutMs },
        { key: id, timeoutMs: o.timeoutMs + o.startupTimeoutMs + KERNEL_SLACK_MS, signal: o.signal },
      );
    } finally {
      const left = (this.#inflight.get(id) ?? 1) - 1;
      if (left > 0) this.#inflight.set(id, left);
      else {
        this.#inflight.delete(id);
        for (const done of this.#waiters.get(id)?.splice(0) ?? []) done();
        this.#waiters.delete(id);
      }
    }
  }
}
