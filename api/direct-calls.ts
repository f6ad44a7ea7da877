/**
 * Calls sent from the owner's thread straight to an open connection's
 * transport worker (the direct path of api/sessions.ts), counted per
 * connection so the composer can wait for them to settle before it closes
 * the connection (`host/drain`, which this provides on the kernel's thread).
 */
import type { Kernel } from '../kernel/kernel.ts';
import type { ClientOp } from '../protocol/services/transport.ts';

/** Kernel deadline slack over the MCP request's own timeout, so the worker's timeout (which cancels on the wire) fires first. */
const KERNEL_SLACK_MS = 2_000;

export class DirectCalls {
  #kernel: Kernel;
  #inflight = new Map<string, number>();
  #waiters = new Map<string, Array<() => void>>();

  constructor(kernel: Kernel) {
    this.#kernel = kernel;
  }

  /** Registers `host/drain` on the kernel. */
  provide(): void {
    this.#kernel.provide('host', {
      'host/drain': async (p: { ids: string[] }) => {
        await Promise.all((Array.isArray(p?.ids) ? p.ids : []).map((id) => this.drained(String(id))));
        return {};
      },
    });
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

  async request(id: string, op: ClientOp, o: { timeoutMs: number; startupTimeoutMs: number; signal?: AbortSignal }): Promise<unknown> {
    this.#inflight.set(id, (this.#inflight.get(id) ?? 0) + 1);
    try {
      // A dropped server is dialled again inside the worker, within the startup budget.
      return await this.#kernel.call('transport', 'connection/request', { id, op, timeoutMs: o.timeoutMs },
        { key: id, timeoutMs: o.timeoutMs + o.startupTimeoutMs + KERNEL_SLACK_MS, signal: o.signal });
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
