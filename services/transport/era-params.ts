/**
 * One connection's request params for its era. Legacy requests carry their
 * params as given; a modern one adds the `_meta` every 2026-07-28 request
 * carries (protocol version, client info, client capabilities), which is the
 * same for the connection's whole life: it is built once, not per request
 * (nothing changes a message once it is sent, so every request may share it).
 */
import { modernParams } from '../../protocol/rev2026-07-28/index.ts';
import { legacyParams } from '../../protocol/rev2025-11-25/index.ts';
import type { Implementation } from '../../protocol/mcp.ts';

export class EraParams {
  #clientInfo: Implementation;
  #capabilities: Record<string, unknown>;
  #meta: Record<string, unknown> | undefined;
  /** The params of a modern request that has none of its own. */
  #empty: Record<string, unknown> | undefined;

  constructor(clientInfo: Implementation, capabilities: Record<string, unknown>) {
    this.#clientInfo = clientInfo;
    this.#capabilities = capabilities;
  }

  /** What modernParams or legacyParams would return for `params`. */
  of(era: 'modern' | 'legacy', params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
    if (era !== 'modern') return legacyParams(params);
    // A request's own _meta is merged into a fresh one; without one, the shared _meta is what modernParams would build.
    if (params?._meta !== undefined) return modernParams(params, this.#clientInfo, this.#capabilities);
    this.#meta ??= modernParams(undefined, this.#clientInfo, this.#capabilities)._meta as Record<string, unknown>;
    if (params === undefined) return (this.#empty ??= { _meta: this.#meta });
    return { ...params, _meta: this.#meta };
  }
}
